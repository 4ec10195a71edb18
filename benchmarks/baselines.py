"""GPU only: library baselines for the suite's tasks at their full shapes, and the measured roofline.

Per task (its BASELINES part, benchmarks/suite.py): PyTorch eager, torch.compile(mode="max-autotune") of
the eager function, and F.scaled_dot_product_attention (attention tasks, "sdpa") or torch.matmul (GEMM
tasks, "matmul"). Plus the roofline of this session: copy bandwidth (torch copy of 2^28 fp32) and the bf16
tensor peak (torch.matmul 8192^3). Everything is timed by the bench tool's module (do_bench's method with
L2 flush and NVML capping checks) in a sandboxed worker per task (benchmarks/baselines_worker.py).

    .venv/bin/python benchmarks/baselines.py --tasks l2_matmul_square --out benchmarks/results/baselines.json

Writes JSON {"roofline": {...}, "tasks": [{"task", "baselines": {name: timing}}], provenance}.
torch.compile(max-autotune) benchmarks many Triton templates on its first call (minutes for a GEMM);
`--skip-compile` leaves it out when the GPU window is short.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.baselines_worker import BaselineJob, BaselineResult
from benchmarks.suite import SuiteError, select

WORKER = "benchmarks.baselines_worker"
# max-autotune of an 8192^3 GEMM tries ~20 Triton templates at ~1-5 s of compile each: 300 s per task.
TASK_TIMEOUT_S = 300.0


def _run(job: BaselineJob, timeout_s: float) -> BaselineResult | str:
    from services.toolrunner.sandbox import Limits, run_worker

    out = run_worker(
        WORKER, msgspec.json.encode(job), Limits(timeout_s=timeout_s, memory_mb=None, gpu=job.gpu)
    )
    if out.status != "ok" or out.result is None:
        return f"{out.status}: {out.message}"
    return msgspec.json.decode(out.result, type=BaselineResult)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", help="comma-separated task names; default: every task")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "baselines.json")
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--skip-compile", action="store_true", help="leave out torch.compile(max-autotune)")
    ap.add_argument(
        "--budget-s", type=float, default=None, help="stop starting tasks after this many seconds"
    )
    ap.add_argument("--rep-ms", type=float, default=100.0)
    ap.add_argument(
        "--task-timeout-s",
        type=float,
        default=TASK_TIMEOUT_S,
        help=f"longest one task's baselines may run, seconds (default {TASK_TIMEOUT_S:.0f}); "
        "never more than the --budget-s left",
    )
    ap.add_argument(
        "--names", help="comma-separated baselines to measure (e.g. compile); default: each task's all"
    )
    args = ap.parse_args(argv)
    if not args.task_timeout_s > 0:
        ap.error(f"--task-timeout-s {args.task_timeout_s}: must be a positive number of seconds, e.g. 300")
    try:
        metas = select(args.tasks)
    except SuiteError as e:
        ap.error(str(e))
    wanted = set(args.names.split(",")) if args.names else None
    if wanted and (unknown := wanted - {n for m in metas for n in m.baselines}):
        known = sorted({n for m in metas for n in m.baselines})
        ap.error(f"--names {sorted(unknown)}: no selected task has these baselines; known: {known}")
    from services.toolrunner.tools.run_correctness.spec import gpu_count

    if gpu_count() == 0:
        ap.error("unavailable: no GPU (baselines are timed on the GPU only)")
    t0 = time.monotonic()
    end = t0 + args.budget_s if args.budget_s else math.inf
    roof = _run(BaselineJob(kind="roofline", gpu=args.gpu, rep_ms=args.rep_ms), TASK_TIMEOUT_S)
    report: dict = {"roofline": {}, "tasks": [], "provenance": {}}
    if isinstance(roof, str):
        report["roofline"] = {"not_measured": roof}
    else:
        report["roofline"] = {
            "copy_bytes_per_s": roof.copy_bytes_per_s,
            "bf16_flops_per_s": roof.bf16_flops_per_s,
            "copy": msgspec.to_builtins(roof.timings["copy"]),
            "bf16_matmul": msgspec.to_builtins(roof.timings["bf16_matmul"]),
            "how": "copy: dst.copy_(src), 2^28 fp32, bytes = read + write; peak: "
            "torch.matmul bf16 8192^3, 2 n^3 FLOPs",
        }
        report["provenance"] = {
            "device": roof.device,
            "driver": roof.driver,
            "cuda": roof.cuda,
            "torch": roof.torch,
            "triton": roof.triton,
            "method": roof.method,
        }
    for meta in metas:
        if time.monotonic() >= end:
            report["tasks"].append({"task": meta.name, "not_measured": "budget spent before this task"})
            continue
        names = [
            n
            for n in meta.baselines
            if not (args.skip_compile and n == "compile") and (wanted is None or n in wanted)
        ]
        if not names:
            continue
        print(f"baselines {meta.name}: {', '.join(names)}", file=sys.stderr, flush=True)
        res = _run(
            BaselineJob(kind="task", task_path=meta.path, names=names, gpu=args.gpu, rep_ms=args.rep_ms),
            min(args.task_timeout_s, max(30.0, end - time.monotonic())),
        )
        if isinstance(res, str):
            report["tasks"].append({"task": meta.name, "not_measured": res, "baselines": {}})
        else:
            report["tasks"].append({"task": meta.name, "baselines": msgspec.to_builtins(res.timings)})
    report["wall_s"] = time.monotonic() - t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
