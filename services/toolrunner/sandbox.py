"""Run untrusted work (task and candidate code, compilers, profilers) in a child process.

Every execution gets a wall-clock timeout, address-space and CPU limits, a fresh scratch directory and a
scrubbed environment. A crash, hang or out-of-memory comes back as a `SandboxOutcome` status, never as an
exception in the runner, so the runner keeps serving (DESIGN.md rule 4 and 5).

A worker is a module run as `python -m <module>`: it reads its JSON request from stdin and writes its
JSON result to the file named by the `KPILOT_RESULT` environment variable (stdout stays free for the
noise compilers and user code print).
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

import msgspec

from services.toolrunner.error_text import error_line

# Variables a worker may inherit. Everything else (tokens, proxies, the caller's CUDA settings) is
# dropped; the GPU is chosen explicitly by `Limits.gpu`. TRITON_CACHE_DIR is kept so a caller that sets it
# (benchmarks/exhaustive.py) shares one compiled-kernel cache with all its workers; when it is unset, as
# it normally is, each worker gets a fresh cache in its scratch dir.
_KEEP_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
             "CUDA_HOME", "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH")

Status = Literal["ok", "failed", "timeout", "crashed", "out_of_memory"]


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    timeout_s: float = 120.0
    # Address-space cap. CUDA reserves huge virtual ranges, so GPU workers run without it.
    memory_mb: int | None = 8192
    cpu_s: int | None = None
    gpu: int | None = None  # CUDA device index to expose, None = no GPU visible
    interpret: bool = False  # TRITON_INTERPRET=1: run Triton kernels on CPU tensors
    env: tuple[tuple[str, str], ...] = ()  # extra variables, e.g. (("TRITON_CACHE_DIR", "/x"),)


DEFAULT_LIMITS = Limits()  # frozen: one shared default is safe

class SandboxOutcome(msgspec.Struct, kw_only=True):
    status: Status
    returncode: int | None
    duration_s: float
    result: bytes | None = None  # the worker's JSON result, when it wrote one
    stdout_tail: str = ""
    stderr_tail: str = ""
    signal_name: str | None = None

    @property
    def message(self) -> str:
        """One line for a structured failure: what happened and the error line of stderr (error_text.py)."""
        last = [error_line(self.stderr_tail)]
        match self.status:
            case "timeout":
                return f"timed out after {self.duration_s:.1f} s"
            case "crashed":
                return f"worker crashed ({self.signal_name or self.returncode}): {last[0]}"
            case "out_of_memory":
                return f"worker ran out of memory: {last[0]}"
            case _:
                return last[0]


_TAIL = 8000
# What an allocation failure under RLIMIT_AS prints: Python and numpy ("MemoryError",
# "_ArrayMemoryError"), torch's CPU allocator (a RuntimeError naming DefaultCPUAllocator), CUDA.
_OOM_MARKERS = ("MemoryError", "DefaultCPUAllocator: can't allocate memory", "CUDA out of memory",
                "OutOfMemoryError")
# After the kill, how long to wait for the pipes to close: a grandchild that left the process group
# (its own setsid) keeps them open and would otherwise block the runner for as long as it lives.
_DRAIN_S = 5.0


def _drain(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """Collect what a killed worker left in its pipes without waiting on escaped grandchildren."""
    try:
        return proc.communicate(timeout=_DRAIN_S)
    except subprocess.TimeoutExpired:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()
        return b"", b"(output lost: a process the worker started outlived it and held its pipes)"


def run_worker(module: str, request: bytes, limits: Limits = DEFAULT_LIMITS, *, cwd: Path | None = None,
               ) -> SandboxOutcome:
    """Run `python -m module` with `request` on stdin under `limits`; never raises for worker failure."""
    scratch = Path(tempfile.mkdtemp(prefix="kpilot-sbx-"))
    result_path = scratch / "result.json"
    env = {k: v for k, v in os.environ.items() if k in _KEEP_ENV}
    env.update({"KPILOT_RESULT": str(result_path), "KPILOT_SCRATCH": str(scratch), "TMPDIR": str(scratch),
                "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1",
                "CUDA_VISIBLE_DEVICES": "" if limits.gpu is None else str(limits.gpu)})
    env.setdefault("TRITON_CACHE_DIR", str(scratch / "triton-cache"))
    if limits.interpret:
        env["TRITON_INTERPRET"] = "1"
    env.update(dict(limits.env))
    # The project root must be importable so workers can import shared/ and services/.
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")

    def _limit() -> None:  # runs in the child between fork and exec
        os.setsid()
        if limits.memory_mb is not None:
            cap = limits.memory_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        if limits.cpu_s is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", module], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=cwd or scratch, env=env, preexec_fn=_limit)  # noqa: PLW1509 - rlimits must be set in the child
    try:
        out, err = proc.communicate(request, timeout=limits.timeout_s)
        timed_out = False
        # A worker may leave background processes (stdout closed) that live on and could, for instance,
        # rewrite a candidate's outputs after the reference ran: end its whole process group now.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = _drain(proc)
        timed_out = True
    duration = time.monotonic() - start
    try:
        result = result_path.read_bytes() if result_path.exists() else None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    stdout, stderr = out.decode(errors="replace")[-_TAIL:], err.decode(errors="replace")[-_TAIL:]
    rc = proc.returncode
    status: Status
    sig = None
    if timed_out:
        status = "timeout"
    elif rc is not None and rc < 0:
        sig = signal.Signals(-rc).name
        status = "out_of_memory" if sig == "SIGKILL" and "MemoryError" in stderr else "crashed"
    elif rc == 0 and result is not None:
        # A worker that finished and wrote its result is ok even if a library it ran logged an OOM it
        # handled (H200 run 14: inductor's max-autotune reports templates that ran out of memory, and all
        # five GEMM baselines were thrown away as "out_of_memory").
        status = "ok"
    elif any(marker in stderr for marker in _OOM_MARKERS):
        status = "out_of_memory"
    else:
        status = "failed"
    return SandboxOutcome(status=status, returncode=rc, duration_s=duration, result=result,
                          stdout_tail=stdout, stderr_tail=stderr, signal_name=sig)
