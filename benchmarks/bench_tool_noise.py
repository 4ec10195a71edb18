"""GPU only: run-to-run noise of the `bench` tool on a ~0.75 ms kernel (target: CV <= 1 %).

Runs the bench tool (the real path: runner -> sandboxed worker -> GPU) `--runs` times on
benchmarks/tasks/add_1ms.py (vector add of 2^28 fp32, 0.74 ms on the H200 per GPU.md), then reports each
run's within-run CV and sample count, and the CV of the run medians across runs. Both should be <= 1 %;
`passed` says whether they are. Writes JSON to --out (and to $KPILOT_FIXTURE_OUT/bench_tool_noise.json
when that is set). Each run (a sandboxed worker: import, estimate, 25 ms warm-up, 100 ms of samples, each
with a 256 MiB flush) took 8.8 s on the H200 (52.9 s for 6), so the default 8 runs take ~70 s.

    .venv/bin/python benchmarks/bench_tool_noise.py --out benchmarks/results/bench_tool_noise.json

Measured on the H200 (run 1, benchmarks/results/h200/bench_tool_noise.json, 6 runs): medians 0.7366-0.7491
ms (4.30-4.37 TB/s), across-run CV 0.67 %, within-run CV 0.31-3.12 %: FAIL. Each run had only 50-60
samples, sized from a 1.99 ms estimate of a 0.74 ms call, and the samples were synchronised one by one
with an NVML read between them; the bench records of the same run (tests/fixtures/h200/bench_ab_vector_add
.json) show the resulting noise: positive-only outliers of +4 to +29 %, in runs of rounds, on both sides of
an A/B at once. services/toolrunner/worker_lib/gpu_timing.py now estimates per call (flush outside the
events, median of 5) and enqueues samples in ~10 ms chunks without a sync between them; the per-run
samples are saved below (`samples_ms`) so the next run shows where any remaining noise is.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_CV = 0.01  # the project's noise target for a ~1 ms kernel


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="where to write the JSON result")
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--task", type=Path, default=ROOT / "benchmarks" / "tasks" / "add_1ms.py")
    ap.add_argument("--rep-ms", type=float, default=100.0)
    ap.add_argument("--gpu", type=int, default=0)
    args = ap.parse_args()

    import msgspec

    from services.toolrunner.timing_stats import cv, summarize
    from services.toolrunner.tools.bench import spec as bench
    from shared.tools.bench import BenchInput

    runs = []
    t0 = time.monotonic()
    for i in range(args.runs):
        out = bench.run(
            BenchInput(task_path=str(args.task), shape="full", rep_ms=args.rep_ms, gpu=args.gpu, seed=i)
        )
        runs.append(out)
        print(
            f"run {i}: median {out.stats.median_ms:.4f} ms, cv {out.stats.cv:.4%}, n {out.stats.n}, "
            f"dropped {out.method.dropped_throttled}, sm clock {out.clocks_before.sm_clock_mhz} MHz",
            file=sys.stderr,
        )
    medians = [r.stats.median_ms for r in runs]
    within = [r.stats.cv for r in runs]
    across = cv(medians)
    result = {
        "task": str(args.task.relative_to(ROOT)) if args.task.is_relative_to(ROOT) else str(args.task),
        "runs": args.runs,
        "wall_s": time.monotonic() - t0,
        "target_cv": TARGET_CV,
        "within_run_cv": within,
        "within_run_cv_max": max(within),
        "run_medians_ms": medians,
        "run_medians": msgspec.to_builtins(summarize(medians)),
        "across_run_cv": across,
        "passed": max(within) <= TARGET_CV and across <= TARGET_CV,
        "tbytes_per_s": [r.tbytes_per_s for r in runs],
        "n_samples": [r.stats.n for r in runs],
        "estimate_ms": [r.method.estimate_ms for r in runs],
        "samples_ms": [r.samples_ms for r in runs],  # every kept sample, in the order taken
        "method": runs[0].method.description,
        "provenance": msgspec.to_builtins(runs[0].provenance),
        "clocks": [[msgspec.to_builtins(r.clocks_before), msgspec.to_builtins(r.clocks_after)] for r in runs],
    }
    text = json.dumps(result, indent=1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    if os.environ.get("KPILOT_FIXTURE_OUT"):
        d = Path(os.environ["KPILOT_FIXTURE_OUT"])
        d.mkdir(parents=True, exist_ok=True)
        (d / "bench_tool_noise.json").write_text(text)
    print(
        f"within-run CV max {max(within):.3%}, across-run CV {across:.3%}: "
        f"{'PASS' if result['passed'] else 'FAIL'} (target {TARGET_CV:.0%})",
        file=sys.stderr,
    )
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
