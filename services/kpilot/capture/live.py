"""The workload side of the live capture path: answer telemetry's CaptureRequest by capturing the kernel
in this process, and run an unmodified program under the launch SDK with it.

    python -m services.kpilot.capture.live --nats URL [--node NODE] -- script.py [ARGS...]

runs `script.py` as `__main__` with the launch SDK installed (services/telemetry/sdk.py; under
TRITON_INTERPRET=1 it counts at the interpreter's entry and times launches by wall clock), a LaunchPublisher
sending launch batches on `telemetry.launches.<node>`, and a CaptureAgent consuming `capture.request.<node>`
(JetStream, durable `workload-capture-<node>`: a request made while no workload listened waits for one).
Asked for a kernel, the agent installs the capture hook (hook.py), waits (an event from the hook, no
polling) until the program launched that kernel `calls` times, writes its task with taskgen, and publishes
the task's source and sha256 on `capture.task.<kernel>`, or an `error` that names what to do instead. The
telemetry service checks, stores and registers it (services/telemetry/capture_bus.py).

Partial: one durable consumer per node, so on a node with several workload processes a request reaches one
of them; when that one does not launch the kernel within `wait_s` it answers so, and the next state event
asks again (the request may land on another process).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import runpy
import socket
import sys
import tempfile
import threading
from pathlib import Path

from services.kpilot.capture import hook
from services.kpilot.capture.taskgen import write_tasks
from shared.bus import Bus
from shared.bus_thread import BusThread
from shared.limits import MAX_CAPTURED_TASK_BYTES
from shared.messages import CapturedTaskSource, CaptureRequest
from shared.subjects import capture_request_subject, captured_task_subject, token

# How long a request waits for the kernel's launches: a hot kernel launches many times a second; a minute
# without one means it is not this process's (or the program moved on).
DEFAULT_WAIT_S = 60.0
# Launches of the kernel recorded before the task is written: the first one shows which tensors it writes;
# a second shows the call is steady (taskgen picks the variant that moved the most elements).
DEFAULT_CALLS = 2
MANUAL_FIX = "capture it with `kpilot capture --out DIR -- CMD` and `kpilot register DIR/<kernel>_task.py`"


def capture_kernel(req: CaptureRequest, *, source: str, wait_s: float = DEFAULT_WAIT_S,
                   calls: int = DEFAULT_CALLS) -> CapturedTaskSource:
    """Blocks until the kernel was launched `calls` times in this process (or `wait_s` passed) and returns
    its captured task; never raises for a capture that failed: the answer's `error` says why."""

    def answer(**kw: object) -> CapturedTaskSource:
        return CapturedTaskSource(source=source, kernel=req.kernel, node=req.node, request_id=req.id,
                                  event_id=req.event_id, triples=req.triples, pid=os.getpid(),
                                  causation_id=req.id, **kw)  # type: ignore[arg-type]

    if hook.installed():
        return answer(error="a capture is already running in this process (kpilot capture, or an earlier "
                            f"request); ask again later or {MANUAL_FIX}")
    done = threading.Event()

    def listener(name: str, n: int) -> None:
        if name == req.kernel and n >= calls:
            done.set()

    with tempfile.TemporaryDirectory(prefix="kpilot-live-") as tmp:
        hook.add_listener(listener)
        hook.install(tmp, [f"live capture in pid {os.getpid()}"], at_exit=False)
        try:
            launched = done.wait(wait_s)
        finally:
            hook.uninstall()
            hook.remove_listener(listener)
        if not launched:
            return answer(error=f"process {os.getpid()} did not launch {req.kernel} {calls} times within "
                                f"{wait_s:g} s (it runs in another process, or no longer runs); {MANUAL_FIX}")
        report = write_tasks(hook.dump(), Path(tmp), 1, 0.0, only=req.kernel)
        entry = next((k for k in report.kernels if k.kernel == req.kernel and k.task), None)
        if entry is None or not entry.task:
            problems = "; ".join(p for k in report.kernels if k.kernel == req.kernel for p in k.problems)
            return answer(error=f"no task could be written for {req.kernel}: {problems or 'no launch recorded'}; "
                                f"{MANUAL_FIX} and complete the task by hand")
        text = Path(entry.task).read_text()
    size = len(text.encode())
    if size > MAX_CAPTURED_TASK_BYTES:
        return answer(error=f"the captured task is {size} bytes, over the {MAX_CAPTURED_TASK_BYTES} byte limit "
                            f"(values saved from the call are too large to send); {MANUAL_FIX}",
                      origin=entry.origin, calls=entry.calls)
    return answer(sha256=hashlib.sha256(text.encode()).hexdigest(), source_text=text, origin=entry.origin,
                  calls=entry.calls)


class CaptureAgent(BusThread):
    """Consumes `capture.request.<node>` and answers each request on `capture.task.<kernel>`.

    `start()` runs it on a daemon thread with its own event loop (as LaunchPublisher does); a workload with
    an asyncio loop may `await agent.run(stop)` instead. A capture blocks a worker thread, never the loop."""

    THREAD_NAME = "kpilot-capture-agent"
    WHAT = "capture agent"

    def __init__(self, url: str, *, node: str = "", wait_s: float = DEFAULT_WAIT_S, calls: int = DEFAULT_CALLS,
                 source: str = "") -> None:
        if not wait_s > 0 or calls < 1:
            raise ValueError(f"wait_s is seconds > 0 and calls a count >= 1; got {wait_s}, {calls}")
        self.url, self.node = url, node or socket.gethostname()
        self.wait_s, self.calls = wait_s, calls
        self.source = source or f"workload:{os.getpid()}"
        self.answered = 0
        super().__init__()

    async def run(self, stop: asyncio.Event, bus: Bus | None = None) -> None:
        own = bus is None
        bus = bus or await Bus.connect(self.url, self.source)

        async def on_request(req: CaptureRequest) -> None:
            out = await asyncio.to_thread(capture_kernel, req, source=self.source, wait_s=self.wait_s,
                                          calls=self.calls)
            await bus.publish(captured_task_subject(req.kernel), out)
            self.answered += 1

        try:
            # ack_wait covers a capture's wait: a request being captured is not redelivered meanwhile.
            await bus.consume(capture_request_subject(self.node), f"workload-capture-{token(self.node)}",
                              on_request, CaptureRequest, ack_wait_s=self.wait_s + 60.0, batch=1)
            self._started.set()
            await stop.wait()
        finally:
            if own:
                await bus.close()



def main(argv: list[str] | None = None) -> int:
    from triton import knobs

    from services.telemetry.sdk import LaunchTelemetry, WallClockTimer
    from services.telemetry.sdk_publish import DEFAULT_INTERVAL_S, LaunchPublisher

    p = argparse.ArgumentParser(prog="python -m services.kpilot.capture.live",
                                description="run a program under the launch SDK with live capture")
    p.add_argument("--nats", required=True, help="NATS URL (with the operator's credentials)")
    p.add_argument("--node", default="", help="node name (default: hostname; the telemetry service's --node)")
    p.add_argument("--interval", type=float, default=DEFAULT_INTERVAL_S, help="seconds between launch batches")
    p.add_argument("--sample-fraction", type=float, default=1 / 16, help="fraction of launches timed")
    p.add_argument("--wait", type=float, default=DEFAULT_WAIT_S, help="seconds a capture waits for launches")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- script.py [ARGS...]")
    args = p.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd or not cmd[0].endswith(".py"):
        p.error("give the program as -- script.py [ARGS...] (a Python file, run as __main__)")
    node = args.node or socket.gethostname()
    # Interpreted launches run on the host: their wall time is their run time (WallClockTimer's note).
    timer = WallClockTimer() if knobs.runtime.interpret else None
    tel = LaunchTelemetry(sample_fraction=args.sample_fraction, timer=timer)
    tel.install()
    pub = LaunchPublisher(tel, args.nats, node=node, interval_s=args.interval).start()
    agent = CaptureAgent(args.nats, node=node, wait_s=args.wait).start()
    sys.argv = cmd
    sys.path.insert(0, str(Path(cmd[0]).resolve().parent))
    try:
        runpy.run_path(cmd[0], run_name="__main__")
    finally:
        agent.stop()
        pub.stop()
        tel.uninstall()
    return 0


if __name__ == "__main__":
    sys.exit(main())
