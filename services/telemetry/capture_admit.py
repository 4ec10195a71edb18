"""The live capture path's decisions, without the bus: which hot kernels to ask a workload for, whether a
captured task's message is acceptable, and where its source is stored (content-addressed).

    asks = CaptureAsks()
    for hot in asks.wanted(event, now):             # a start edge's hot kernels not asked for lately
        ...                                         # the adapter skips kernels that have a task, then:
        publish(capture_request_subject(event.node), request_for(event, hot, source))
        asks.asked(event.node, hot.kernel, now)
    problem = check_source(captured)                # "" or why it is refused, with the fix
    path = store(root, captured)                    # <root>/<sha256>.py, written once

Nothing here runs the task: the adapter has the toolrunner's sandboxed loader (`tools.load_task`) check it.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from services.telemetry.detectors import HOT_SHARE
from shared.limits import MAX_CAPTURED_TASK_BYTES
from shared.messages import CapturedTaskSource, CaptureRequest, KernelShare, StateChangeEvent

# A kernel asked for and not answered (the workload gone, the kernel no longer launched) is asked again by
# the next start edge after this long: 10 minutes, about 40 periods at the 15 s default.
RETRY_S = 600.0
_SHA256 = re.compile(r"[0-9a-f]{64}")
MANUAL_FIX = ("capture it by hand instead: `kpilot capture --out DIR -- CMD`, then `kpilot register "
              "DIR/<kernel>_task.py`")


class CaptureAsks:
    """Which hot kernels a capture was asked for, per node; one request per kernel until answered or
    RETRY_S passed."""

    def __init__(self, retry_s: float = RETRY_S, min_share: float = HOT_SHARE) -> None:
        self.retry_s = retry_s
        self.min_share = min_share
        self._asked: dict[tuple[str, str], float] = {}

    def wanted(self, ev: StateChangeEvent, now: float) -> list[KernelShare]:
        if ev.edge != "start":
            return []
        return [k for k in ev.hot_kernels if k.share >= self.min_share and k.kernel
                and now - self._asked.get((ev.node, k.kernel), -self.retry_s) >= self.retry_s]

    def asked(self, node: str, kernel: str, now: float) -> None:
        self._asked[(node, kernel)] = now

    def forget(self, node: str, kernel: str) -> None:
        """The request was answered with an error: the next start edge may ask again."""
        self._asked.pop((node, kernel), None)


def request_for(ev: StateChangeEvent, hot: KernelShare, source: str) -> CaptureRequest:
    return CaptureRequest(source=source, kernel=hot.kernel, node=ev.node, gpu=ev.gpu, event_id=ev.id,
                          event=ev.event, share=hot.share, triples=list(ev.triples), causation_id=ev.id)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def check_source(msg: CapturedTaskSource) -> str:
    """Why a captured task message cannot be stored ("" when it can); each reason names the fix."""
    if msg.error:
        return f"the workload could not capture {msg.kernel}: {msg.error}"
    size = len(msg.source_text.encode())
    if size == 0:
        return f"the captured task of {msg.kernel} is empty; {MANUAL_FIX}"
    if size > MAX_CAPTURED_TASK_BYTES:
        return (f"the captured task of {msg.kernel} is {size} bytes, over the {MAX_CAPTURED_TASK_BYTES} byte "
                f"limit (values saved from the call are too large to send); {MANUAL_FIX}")
    if not _SHA256.fullmatch(msg.sha256):
        return f"sha256 {msg.sha256[:80]!r} is not a hex SHA-256; send sha256 of source_text (UTF-8)"
    if sha256_text(msg.source_text) != msg.sha256:
        return (f"sha256 {msg.sha256} does not match the captured source of {msg.kernel} (changed in "
                f"transit?); the SDK sets it from source_text, so capture again")
    return ""


def store(root: Path, msg: CapturedTaskSource) -> Path:
    """The source at <root>/<sha256>.py; a file of that name already holds these bytes (content-addressed),
    so a redelivered message writes nothing. Written to a temporary name and renamed: never half a file."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{msg.sha256}.py"
    if not path.is_file():
        tmp = root / f".{msg.sha256}.{os.getpid()}.tmp"
        tmp.write_bytes(msg.source_text.encode())  # the bytes the sha256 is of, whatever the locale
        os.replace(tmp, path)
    return path
