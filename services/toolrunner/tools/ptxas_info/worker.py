"""Worker: assemble one PTX module with `ptxas -v` and return what ptxas printed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import msgspec

from services.toolrunner.worker_lib.io import read_request, write_result


class PtxasJob(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    ptxas: str  # path of the ptxas binary
    ptx: str
    arch: str  # "sm_90a"
    fmad: bool = True  # Triton passes --fmad=false when enable_fp_fusion is off
    # ptxas 12.8/13.0 no longer print cmem for sm_90; `cuobjdump -res-usage` of the cubin still does.
    cuobjdump: str = ""


class PtxasWorkerResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    returncode: int
    log: str  # ptxas -v writes its report to stderr; stdout is appended (normally empty)
    command: list[str]
    res_usage: str = ""  # cuobjdump -res-usage of the cubin ptxas wrote


def command(job: PtxasJob, ptx_path: str, out_path: str) -> list[str]:
    """The flags Triton's own make_cubin passes (triton/backends/nvidia/compiler.py), so the registers
    and spills reported are those of the cubin Triton builds."""
    fmad = [] if job.fmad else ["--fmad=false"]
    return [job.ptxas, "-lineinfo", *fmad, "-v", f"--gpu-name={job.arch}", ptx_path, "-o", out_path]


def main() -> None:
    job = read_request(PtxasJob)
    scratch = Path(os.environ.get("KPILOT_SCRATCH", "."))
    src = scratch / "kernel.ptx"
    src.write_text(job.ptx)
    cmd = command(job, str(src), str(scratch / "kernel.cubin"))
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600)
    shown = [Path(c).name if c.startswith(str(scratch)) else c for c in cmd]
    res_usage = ""
    if proc.returncode == 0 and job.cuobjdump:
        dump = subprocess.run(
            [job.cuobjdump, "-res-usage", str(scratch / "kernel.cubin")],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
        res_usage = dump.stdout if dump.returncode == 0 else ""
    write_result(
        PtxasWorkerResult(
            returncode=proc.returncode, log=proc.stderr + proc.stdout, command=shown, res_usage=res_usage
        )
    )


if __name__ == "__main__":
    main()
