"""GPU (H200): the verifier's cost and honesty. Wall time per layer per candidate on the examples, and the
false-reject rate of honest candidates over repeated runs.

For each example task (vector_add, row_softmax, matmul by default) it verifies an honest config change
`--repeats` times through the real funnel (in-process tool client: every tool in its sandboxed workers,
no NATS), and a few cheats from tests/verifier/cheats once each. An honest candidate is *falsely rejected*
when a layer fails it for a reason other than "no significant gain" (a config change need not be
faster; a verifier that calls it wrong, unstable or impossible is the error). Writes JSON to --out (and to
$KPILOT_FIXTURE_OUT/bench_verifier.json when set). On a machine without a GPU it still runs and says
"not measured: no GPU" for the timing layers, which makes the false-reject figure a CPU-only one.

Order: one honest run per task, then the cheats, then the remaining repeats task by task, so a run cut
short by `--budget-s` still covers every task and every cheat. Once the budget is spent no new funnel run
starts (the one under way finishes); the JSON says how many runs were planned and done and which were not.

    .venv/bin/python benchmarks/bench_verifier.py --out benchmarks/results/bench_verifier.json
    .venv/bin/python benchmarks/bench_verifier.py --repeats 2 --budget-s 150 --out /tmp/bv.json  # H200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Honest config changes, each a step the optimizer would plausibly try first.
HONEST = {
    "vector_add": {"BLOCK": 1024, "num_warps": 4},
    "row_softmax": {"BLOCK_N": 1024, "num_warps": 8},
    "matmul": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
}
CHEATS = {
    "vector_add": ["pointer_cache", "timer_patch", "precision_fp16", "benchmark_shape_cache", "side_stream"],
    "matmul": ["matmul_fp16_accumulate"],
}
NO_GAIN = "no significant gain"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tasks", nargs="+", default=list(HONEST))
    ap.add_argument("--no-cheats", action="store_true")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="start no new funnel run after this many seconds (default: no limit); what ran is written",
    )
    args = ap.parse_args()
    unknown = sorted(set(args.tasks) - set(HONEST))
    if unknown:
        ap.error(f"--tasks {unknown}: not known; choose from {', '.join(HONEST)}")

    import msgspec

    from services.toolrunner.registry import local_executor
    from services.verifier.funnel import VerifyJob, verify
    from shared.toolclient import InProcessToolClient

    def run(task: str, candidate: str | None, config: dict) -> dict:
        job = VerifyJob(
            candidate_id=f"{task}:{candidate or 'config'}",
            task_path=str(ROOT / "examples" / f"{task}.py"),
            candidate_path=str(ROOT / "tests" / "verifier" / "cheats" / f"{candidate}.py")
            if candidate
            else None,
            config=config,
        )
        t0 = time.perf_counter()
        verdicts = asyncio.run(verify(job, InProcessToolClient(local_executor(), source="bench_verifier")))
        wall = time.perf_counter() - t0
        rec = {
            "task": task,
            "candidate": candidate or "config change",
            "config": config,
            "wall_s": wall,
            "layers": [
                {
                    "layer": v.layer,
                    "status": v.status,
                    "wall_s": v.wall_s,
                    "gpu_seconds": v.gpu_seconds,
                    "reasons": v.reasons,
                }
                for v in verdicts
            ],
            "verdicts": msgspec.to_builtins(verdicts),
        }
        print(
            f"{task:<12} {rec['candidate']:<24} "
            + " ".join(f"{v.layer}:{v.status}:{v.wall_s:.1f}s" for v in verdicts),
            file=sys.stderr,
        )
        return rec

    # (task, cheat or None for the honest config change), in the order they run.
    plan: list[tuple[str, str | None]] = [(task, None) for task in args.tasks if args.repeats > 0]
    if not args.no_cheats:
        plan += [(task, name) for task in args.tasks for name in CHEATS.get(task, [])]
    plan += [(task, None) for task in args.tasks for _ in range(args.repeats - 1)]
    honest, cheats = [], []
    not_run: list[dict] = []
    t0 = time.monotonic()
    for task, cheat in plan:
        if args.budget_s is not None and time.monotonic() - t0 >= args.budget_s:
            not_run.append({"task": task, "candidate": cheat or "config change"})
            continue
        if cheat is None:
            honest.append(run(task, None, HONEST[task]))
        else:
            cheats.append(run(task, cheat, {}))
    if not_run:
        print(f"budget {args.budget_s:g} s spent: {len(not_run)} of {len(plan)} runs not started",
              file=sys.stderr)

    def false_reject(rec: dict) -> bool:
        last = rec["layers"][-1]
        return last["status"] == "fail" and not all(r.startswith(NO_GAIN) for r in last["reasons"])

    per_layer = {}
    for layer in ("static", "micro", "full"):
        walls = [lay["wall_s"] for r in honest for lay in r["layers"] if lay["layer"] == layer]
        gpus = [lay["gpu_seconds"] for r in honest for lay in r["layers"] if lay["layer"] == layer]
        per_layer[layer] = {
            "n": len(walls),
            "median_wall_s": statistics.median(walls) if walls else None,
            "max_wall_s": max(walls) if walls else None,
            "median_gpu_seconds": statistics.median(gpus) if gpus else None,
        }
    rejected = [r for r in honest if false_reject(r)]
    from services.verifier.accounting import funnel_report
    from shared.messages import Verdict

    all_verdicts = [msgspec.convert(v, Verdict) for r in honest + cheats for v in r["verdicts"]]
    result = {
        "runs_planned": len(plan),
        "runs_done": len(honest) + len(cheats),
        "budget_s": args.budget_s,
        "not_run": not_run,
        "honest_runs": len(honest),
        "false_rejects": len(rejected),
        "false_reject_rate": len(rejected) / len(honest) if honest else None,
        "false_reject_reasons": [r["layers"][-1]["reasons"] for r in rejected],
        "per_layer_honest": per_layer,
        "cheats": [
            {
                "task": r["task"],
                "cheat": r["candidate"],
                "stopped_at": r["layers"][-1]["layer"],
                "status": r["layers"][-1]["status"],
                "reasons": r["layers"][-1]["reasons"],
            }
            for r in cheats
        ],
        "funnel": msgspec.to_builtins(funnel_report(all_verdicts).overall),
        "provenance": next((r["verdicts"][-1]["provenance"] for r in honest if r["verdicts"]), {}),
        "total_s": time.monotonic() - t0,
        "runs": [{k: v for k, v in r.items() if k != "verdicts"} for r in honest + cheats],
    }
    text = json.dumps(result, indent=1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    if out := os.environ.get("KPILOT_FIXTURE_OUT"):
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "bench_verifier.json").write_text(text)
    print(
        json.dumps(
            {
                k: result[k]
                for k in (
                    "runs_planned",
                    "runs_done",
                    "honest_runs",
                    "false_rejects",
                    "false_reject_rate",
                    "per_layer_honest",
                )
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
