"""Worker: run a task's launch under compute-sanitizer, once per requested tool, and return the text."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec

from services.toolrunner.worker_lib.io import read_request, write_result
from services.toolrunner.worker_lib.launch_task import LaunchTaskRequest

# Findings printed per tool: the record keeps the first 20 anyway (shared/parsers/sanitizer.py
# MAX_FINDINGS), and a broken kernel can print one per thread (millions) and run for hours.
PRINT_LIMIT = 20


class SanitizeWorkerRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    sanitizer: str
    tools: list[str]
    kernel: str = ""
    launch: LaunchTaskRequest
    timeout_s: float


class SanitizerRun(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    tool: str
    command: list[str]
    returncode: int | None
    output: str  # stdout + stderr (the sanitizer writes to stdout, the program may write to both)
    timed_out: bool = False


class SanitizeWorkerResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    version: str
    runs: list[SanitizerRun]


# The sanitizer's own lines are what we parse; keep the head (first findings) and the tail (summary).
_KEEP = 200_000


def _clip(text: str) -> str:
    if len(text) <= 2 * _KEEP:
        return text
    return text[:_KEEP] + "\n[... clipped ...]\n" + text[-_KEEP:]


def main() -> None:
    req = read_request(SanitizeWorkerRequest)
    scratch = Path(os.environ.get("KPILOT_SCRATCH", "."))
    launch_path = scratch / "launch.json"
    launch_path.write_bytes(msgspec.json.encode(req.launch))
    version = subprocess.run(
        [req.sanitizer, "--version"], capture_output=True, check=False, text=True, timeout=60
    )
    runs = []
    for tool in req.tools:
        # --show-backtrace no: host stacks are dozens of lines per finding and say nothing about the kernel.
        cmd = [req.sanitizer, "--tool", tool, "--print-limit", str(PRINT_LIMIT), "--show-backtrace", "no"]
        if req.kernel:
            cmd += ["--kernel-name", f"kns={req.kernel}"]
        cmd += [sys.executable, "-m", "services.toolrunner.worker_lib.launch_task", str(launch_path)]
        try:
            p = subprocess.run(cmd, capture_output=True, check=False, text=True, timeout=req.timeout_s)
            runs.append(
                SanitizerRun(
                    tool=tool, command=cmd, returncode=p.returncode, output=_clip(p.stdout + "\n" + p.stderr)
                )
            )
        except subprocess.TimeoutExpired as e:
            out = (
                (e.stdout or b"").decode(errors="replace")
                if isinstance(e.stdout, bytes)
                else (e.stdout or "")
            )
            runs.append(
                SanitizerRun(tool=tool, command=cmd, returncode=None, output=_clip(out), timed_out=True)
            )
    write_result(
        SanitizeWorkerResult(
            version=version.stdout.strip().splitlines()[-1:][0] if version.stdout else "", runs=runs
        )
    )


if __name__ == "__main__":
    main()
