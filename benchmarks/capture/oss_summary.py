"""One row per captured kernel of benchmarks/runs/i21_oss.sh (issue 21's evidence), from what it left in OUT:
OUT/capture/capture.json, OUT/verify_<task>.json (`kpilot verify --json`) and OUT/optimize_<task>.json
(`kpilot optimize --json`, the job record). The patch numbers are benchmarks/suite_loop.py's
(`patch_rows`, `best_patch`, `wall_s_to_verified`, `outcome_of`): the verifier's full-shape medians of the
task (original kernel at its captured config) and of the patch, the speedup with its 95 % CI, the seconds
from the request to the first verified patch, the changes and the diff. Beside them, the kernel's torch
expression (benchmarks/capture/oss_program.TORCH_EQUIVALENTS) under torch.compile at the program's shapes,
timed by triton.testing.do_bench (median and p20/p80 of its repetitions, not a CI; another process than
the verifier's timing); "not measured" with the reason otherwise.

    python benchmarks/capture/oss_summary.py OUT TOKENS HIDDEN FFN DTYPE
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for p in (ROOT, ROOT / "benchmarks" / "capture"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from benchmarks.ledger import run_stamp
from benchmarks.suite_loop import NO_GPU, best_patch, gpu_seconds, outcome_of, patch_rows, wall_s_to_verified


def torch_compile_ms(kernel: str, sizes: dict[str, int], dtype: str) -> dict | str:
    import torch

    try:
        from oss_program import TORCH_EQUIVALENTS
    except ImportError as e:  # the program imports liger_kernel and fla
        return f"not measured: benchmarks/capture/oss_program.py does not import ({e})"
    if kernel not in TORCH_EQUIVALENTS:
        return "not measured: no torch expression written for this kernel"
    if not torch.cuda.is_available():
        return NO_GPU
    import triton.testing

    fn, shapes = TORCH_EQUIVALENTS[kernel]
    args = [torch.randn(*(sizes[d] for d in s), device="cuda", dtype=getattr(torch, dtype)) for s in shapes]
    compiled = torch.compile(fn)
    compiled(*args)
    med, lo, hi = triton.testing.do_bench(lambda: compiled(*args), quantiles=[0.5, 0.2, 0.8])
    return {"median_ms": med, "p20_p80_ms": [lo, hi], "expression": fn.__name__, "timer": "triton.testing.do_bench"}


def _json(path: Path) -> object:
    if not path.is_file() or not path.read_text().strip():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError:
        return "not JSON: " + path.read_text()[-500:]


def summary(out: Path, sizes: dict[str, int], dtype: str) -> dict:
    import torch

    gpu = torch.cuda.is_available()
    rep = json.loads((out / "capture" / "capture.json").read_text())
    rows = []
    for k in rep["kernels"]:
        row = {x: k[x] for x in ("kernel", "origin", "calls", "share", "share_of", "gpu_ms", "task", "problems")}
        stem = Path(k["task"]).stem if k["task"] else ""
        v = _json(out / f"verify_{stem}.json") if stem else None
        row["verify"] = ([{x: d.get(x) for x in ("layer", "status", "reasons")} for d in v]
                         if isinstance(v, list) else v or "not run")
        job = _json(out / f"optimize_{stem}.json") if stem else None
        if isinstance(job, dict):
            patches = patch_rows(job, {}, gpu)
            best = best_patch(patches)
            row["optimize"] = {
                "outcome": outcome_of(job, gpu), "job_id": job["job_id"], "candidates": len(job["candidates"]),
                "gpu_s": gpu_seconds(job, gpu), "wall_s_to_verified": wall_s_to_verified(patches, gpu),
                "best": {x: best[x] for x in ("candidate_id", "config", "task_median_ms", "candidate_median_ms",
                                              "speedup", "speedup_ci", "changes", "diff")} if best else None,
                "proposed": [{x: p[x] for x in ("candidate_id", "changes", "not_verified")}
                             for p in patches if p["kind"] == "proposed"][:3],
            }
        else:
            row["optimize"] = job or "not run"
        row["torch_compile"] = torch_compile_ms(k["kernel"], sizes, dtype) if k["task"] else "not measured: no task"
        rows.append(row)
    return {"stamp": run_stamp(), "command": rep["command"], "timing": rep["timing"], "shapes": sizes,
            "dtype": dtype, "kernels": rows}


def main(argv: list[str]) -> int:
    out, t, h, f, dtype = Path(argv[1]), *map(int, argv[2:5]), argv[5]
    s = summary(out, {"t": t, "h": h, "f": f}, dtype)
    (out / "i21_oss.json").write_text(json.dumps(s, indent=1) + "\n")
    for r in s["kernels"]:
        o = r["optimize"]
        best = o.get("best") if isinstance(o, dict) else None
        print(f"{r['kernel']}: share {r['share']:.1%}, task {r['task'] or r['problems']}; "
              f"verify {[x['status'] for x in r['verify']] if isinstance(r['verify'], list) else r['verify']}; "
              f"optimize {o['outcome'] if isinstance(o, dict) else o}; "
              f"best {best and (best['speedup'], best['speedup_ci'])}; torch.compile {r['torch_compile']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
