"""Worker: profile one launch of a task's kernel with Nsight Compute and return the raw CSV page.

ncu runs `python -m services.toolrunner.worker_lib.launch_task` with `--profile-from-start off -k
regex:^<kernel>$ -c 1`, so it profiles only the launch inside the cudaProfilerStart/Stop range (a batch
request widens that to `-k regex:<kernel_regex> -c <launch_count>`: one launch in each of several
ranges). Clocks are left alone (`--clock-control none`, GPU.md: ncu's default locks base clocks). The
report is written to the artifact directory, then read back with `ncu --import ... --csv --page raw`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from services.toolrunner.worker_lib.io import read_request, write_result
from services.toolrunner.worker_lib.launch_task import LaunchTaskRequest
from shared.parsers.ncu import available_metric_bases, metric_base


class NcuWorkerRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    ncu: str  # path of the ncu binary
    launch: LaunchTaskRequest
    kernel: str
    metrics: list[str]
    report_dir: str
    timeout_s: float
    # A batch of launches (benchmarks/bench_decomposer_ncu.py): an ncu "regex:" kernel filter that
    # replaces the exact match on `kernel` (then only a name for the report), and how many launches
    # inside the cudaProfilerStart/Stop ranges to profile.
    kernel_regex: str = ""
    launch_count: int = 1


class NcuWorkerResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    ok: bool
    csv: str = ""
    command: list[str] = []
    metrics_requested: list[str] = []
    metrics_unavailable: list[str] = []
    ncu_version: str = ""
    report_path: str | None = None
    message: str = ""  # why not ok: ncu's last lines


def _tail(text: str, n: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def main() -> None:
    req = read_request(NcuWorkerRequest)
    scratch = Path(os.environ.get("KPILOT_SCRATCH", "."))
    version = subprocess.run(
        [req.ncu, "--version"], capture_output=True, check=False, text=True, timeout=60
    ).stdout
    version = _tail(version, 1)
    metrics, unavailable = list(req.metrics), []
    # Asking for a metric this ncu/chip does not have aborts the whole run, so drop those first.
    query = subprocess.run(
        [req.ncu, "--query-metrics"], capture_output=True, check=False, text=True, timeout=120
    )
    bases = available_metric_bases(query.stdout) if query.returncode == 0 else set()
    if bases:
        unavailable = [m for m in metrics if metric_base(m) not in bases]
        metrics = [m for m in metrics if metric_base(m) in bases]
    launch_path = scratch / "launch.json"
    launch_path.write_bytes(msgspec.json.encode(req.launch))
    report_dir = Path(req.report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{re.sub(r'[^A-Za-z0-9_]', '_', req.kernel)}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    report_base = scratch / stem
    cmd = [
        req.ncu,
        "--clock-control",
        "none",
        "--profile-from-start",
        "off",
        "--metrics",
        ",".join(metrics),
        "-k",
        f"regex:{req.kernel_regex or '^' + re.escape(req.kernel) + '$'}",
        "-c",
        str(req.launch_count),
        "-f",
        "-o",
        str(report_base),
        sys.executable,
        "-m",
        "services.toolrunner.worker_lib.launch_task",
        str(launch_path),
    ]
    base = NcuWorkerResult(
        ok=False, command=cmd, metrics_requested=metrics, metrics_unavailable=unavailable, ncu_version=version
    )
    try:
        prof = subprocess.run(cmd, capture_output=True, check=False, text=True, timeout=req.timeout_s)
    except subprocess.TimeoutExpired:
        write_result(msgspec.structs.replace(base, message=f"ncu timed out after {req.timeout_s:.0f} s"))
        return
    report = report_base.with_suffix(".ncu-rep")
    if prof.returncode != 0 or not report.exists():
        write_result(
            msgspec.structs.replace(
                base, message=f"ncu exited {prof.returncode}: {_tail(prof.stdout + prof.stderr)}"
            )
        )
        return
    kept = report_dir / report.name
    shutil.copy2(report, kept)
    page = subprocess.run(
        [req.ncu, "--import", str(kept), "--csv", "--page", "raw"],
        capture_output=True,
        check=False,
        text=True,
        timeout=300,
    )
    if page.returncode != 0:
        write_result(
            msgspec.structs.replace(
                base,
                report_path=str(kept),
                message=f"ncu --import exited {page.returncode}: {_tail(page.stdout + page.stderr)}",
            )
        )
        return
    write_result(msgspec.structs.replace(base, ok=True, csv=page.stdout, report_path=str(kept)))


if __name__ == "__main__":
    main()
