"""GPU benchmark: corpus attribution with ncu evidence (issue #4's `gpu` benchmark).

For every scored corpus case (tests/decomposer/corpus/, Triton and CUDA C++): launch the kernel once
with real tensors (sizes below), profile that launch with the project's ncu worker
(services/toolrunner/workers/ncu.py, run through the sandbox: --clock-control none, one launch after a
warm-up), feed every numeric counter to the decomposer as `TaskFacts.dynamic.ncu`, and score top-1
accuracy and high-severity false positives with static-only and with static+ncu evidence.

Bounded: `--budget-s` (default 240) stops starting new cases; `--case-timeout-s` caps each ncu run.
Without a GPU (or ncu) it exits 0 with every case "not measured: no GPU" and the launch plan listed.

    .venv/bin/python benchmarks/bench_decomposer_ncu.py --out bench_decomposer_ncu.json [--dry-run]
Writes --out, and $KPILOT_FIXTURE_OUT/bench_decomposer_ncu.json when that variable is set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

E24 = 1 << 24
N8K = 8192
# Elements per pointer argument of each Triton case (every pointer gets this many; the largest extent
# any of its accesses reaches, from the case's args and grid in corpus/cases.py).
TRITON_ELEMS: dict[str, int] = {
    "clean_add": E24,
    "clean_softmax": 32768 * 4096,
    "clean_matmul_bf16": N8K * N8K,
    "clean_matmul_tf32": 4096 * 4096,
    "clean_transpose_tile": 8192 * 8192,
    "clean_rowsum_loop": 16384 * 8192,
    "clean_gelu": E24,
    "clean_bias_rows": 16384 * 4096,
    "scalar_rows_nodiv": 16384 * 4100,
    "scalar_matmul_nodiv": 8200 * 8200,
    "mask_nodiv_add": 16385 * 1024,
    "strided_gather": E24 * 32,
    "strided_scatter": E24 * 32,
    "column_copy": 4096 * 4096,
    "transpose_flat": 8192 * 8192,
    "gather_indices": E24,
    "double_load": 2 * E24,
    "bias_in_loop": 16384 * 4096,
    "atomic_one_counter": E24,
    "atomic_histogram_loop": E24,
    "matmul_fp32_ieee": 4096 * 4096,
    "matmul_upcast": 4096 * 4096,
    "matmul_n8": 4096 * 4096,
    "matmul_2warps": N8K * N8K,
    "matmul_bm32": N8K * N8K,
    "matmul_tiny_tile": N8K * N8K,
    "matmul_one_stage": N8K * N8K,
    "matmul_spills": N8K * N8K,
    "matmul_row_major_grid": N8K * N8K,
    "heavy_regs": E24,
    "one_warp_blocks": E24,
    "idle_threads": E24,
    "small_grid_chunks": E24,
    "tail_wave": 1200 * 2048,
    "tiny_add": 4096,
    "unfused_scale_add": E24,
    "fp64_math": E24,
    "conversions_loop": E24,
    "int_div_loop": E24,
    "precise_sqrt_loop": E24,
    "reduce_in_loop": 16384 * 8192,
    "branch_barrier_loop": 16384 * 8192,
    "flag_branch_loop": E24,
}
NOT_LAUNCHED = {"print_left_in": "device_print of 16.7 M values would flood the profiled launch"}
INT_HIGH = 1024  # *i32 inputs hold indices/values in [0, 1024): valid for gather, histogram, flags
# Counters the dynamic predicates of services/decomposer/patterns.py read, on top of the state set.
EXTRA_METRICS = [
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__issue_active.avg.per_cycle_active",
    "smsp__sass_inst_executed_op_local_ld.sum",
    "smsp__sass_inst_executed_op_local_st.sum",
    "smsp__sass_inst_executed_op_memory.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__average_warp_latency_per_inst_issued.ratio",
]
KEY_COUNTERS = (
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smsp__sass_inst_executed_op_local_ld.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
)


# ---------------------------------------------------------------- launch plan and task shims


def plan() -> list[dict[str, Any]]:
    """One entry per scored corpus case: how it would be launched, or why it is not."""
    from tests.decomposer import decomposer_corpus as corpus_io

    out = []
    for d in corpus_io.case_dirs():
        meta = json.loads((d / "meta.json").read_text())
        name = meta["case"]
        entry: dict[str, Any] = {"case": name, "kernel": meta["kernel"], "expect": meta["expect"]}
        entry["grid"] = meta["grid"]
        if meta.get("language") == "cuda":
            from tests.decomposer.corpus.cuda_cases import CUDA_CASES

            c = next(x for x in CUDA_CASES if x.name == name)
            entry |= {"language": "cuda", "block": list(c.block), "args": [list(a) for a in c.args]}
        else:
            entry["language"] = "triton"
            if name in NOT_LAUNCHED:
                entry["skip"] = NOT_LAUNCHED[name]
            elif name not in TRITON_ELEMS:
                entry["skip"] = "no launch description (add it to TRITON_ELEMS)"
            else:
                entry |= {"elements_per_pointer": TRITON_ELEMS[name], "num_warps": meta["num_warps"]}
                entry["num_stages"] = meta["num_stages"]
        out.append(entry)
    return out


def make_inputs(case: str, device: str) -> tuple[Any, ...]:
    """Tensors and scalars for one launch of `case` (called inside the sandboxed launch process)."""
    import torch

    torch.manual_seed(0)
    if case.startswith("cuda_"):
        from tests.decomposer.corpus.cuda_cases import CUDA_CASES

        c = next(x for x in CUDA_CASES if x.name == case)
        vals: list[Any] = []
        for a in c.args:
            if a[0] == "in":
                vals.append(torch.randn(a[1], device=device))
            elif a[0] == "in_i32":
                vals.append(torch.randint(0, a[2], (a[1],), device=device, dtype=torch.int32))
            elif a[0] == "out":
                vals.append(torch.zeros(a[1], device=device))
            else:
                vals.append(a[1])
        return tuple(vals)
    from tests.decomposer.corpus.cases import CASES

    c = next(x for x in CASES if x.name == case)
    n = TRITON_ELEMS[case]
    dt = {"*fp32": torch.float32, "*bf16": torch.bfloat16, "*fp16": torch.float16, "*i32": torch.int32}
    vals = []
    for name in c.fn.arg_names:
        if name in c.constexprs:
            continue
        v = c.args[name]
        if isinstance(v, str) and v.startswith("*"):
            t = dt[v]
            vals.append(
                torch.randint(0, INT_HIGH, (n,), device=device, dtype=t)
                if t == torch.int32
                else torch.randn(n, device=device).to(t)
            )
        elif isinstance(v, str):
            vals.append(1.0)  # an fp32 scalar (alpha, sm_scale)
        else:
            vals.append(v)
    return tuple(vals)


_CUDA_COMPILED: dict[str, Any] = {}


def launch(case: str, inputs: tuple[Any, ...]) -> None:
    if case.startswith("cuda_"):
        import torch

        from tests.decomposer.corpus.cuda_cases import CUDA_CASES

        c = next(x for x in CUDA_CASES if x.name == case)
        if case not in _CUDA_COMPILED:
            compile_kernel = getattr(torch.cuda, "compile_kernel", None) or torch.cuda._compile_kernel
            _CUDA_COMPILED[case] = compile_kernel(c.source, c.kernel)  # NVRTC, as examples/transpose_cuda.py
        grid = tuple(c.grid) + (1,) * (3 - len(c.grid))
        block = tuple(c.block) + (1,) * (3 - len(c.block))
        _CUDA_COMPILED[case](grid=grid, block=block, args=list(inputs))
        return
    from tests.decomposer.corpus.cases import CASES

    c = next(x for x in CASES if x.name == case)
    c.fn[tuple(c.grid)](*inputs, **c.constexprs, num_warps=c.num_warps, num_stages=c.num_stages)


_SHIM = '''"""Generated by benchmarks/bench_decomposer_ncu.py: launches corpus case {case!r} (not a task)."""
import sys
sys.path.insert(0, {root!r})
from benchmarks import bench_decomposer_ncu as _b

KERNEL_NAME = {kernel!r}
CONFIG = {{}}
SHAPES = {{"micro": {{}}, "full": {{}}}}


def make_inputs(shape, seed, device):
    return _b.make_inputs({case!r}, device)


def launch(inputs):
    _b.launch({case!r}, inputs)


def reference(inputs):
    return None
'''


# ---------------------------------------------------------------- profiling and scoring


def profile(entry: dict[str, Any], ncu: str, tmp: Path, timeout_s: float) -> tuple[dict[str, float], str]:
    """ncu counters of one launch ({} and the reason when it failed)."""
    import msgspec

    from services.toolrunner.ncu_csv import NcuCsvError, parse_ncu_csv, requested_metrics, select_kernel
    from services.toolrunner.sandbox import Limits, run_worker
    from services.toolrunner.workers.launch_task import LaunchTaskRequest
    from services.toolrunner.workers.ncu import NcuWorkerRequest, NcuWorkerResult

    shim = tmp / f"task_{entry['case']}.py"
    shim.write_text(_SHIM.format(case=entry["case"], root=str(ROOT), kernel=entry["kernel"]))
    wreq = NcuWorkerRequest(
        ncu=ncu,
        kernel=entry["kernel"],
        metrics=requested_metrics(EXTRA_METRICS),
        report_dir=str(tmp / "reports"),
        timeout_s=max(10.0, timeout_s - 15.0),
        launch=LaunchTaskRequest(task_path=str(shim), shape="full", profile_range=True),
    )
    outcome = run_worker(
        "services.toolrunner.workers.ncu",
        msgspec.json.encode(wreq),
        Limits(timeout_s=timeout_s, memory_mb=None, gpu=0),
    )
    if outcome.status != "ok" or outcome.result is None:
        return {}, f"not measured: ncu worker {outcome.status}: {outcome.message[-300:]}"
    res = msgspec.json.decode(outcome.result, type=NcuWorkerResult)
    if not res.ok:
        return {}, f"not measured: {res.message[-300:]}"
    try:
        prof = select_kernel(parse_ncu_csv(res.csv), entry["kernel"])
    except NcuCsvError as e:
        return {}, f"not measured: {e}"
    return {k: m.value for k, m in prof.metrics.items() if m.value is not None}, ""


def _top(findings: list) -> dict[str, Any] | None:
    if not findings:
        return None
    f = findings[0]
    return {"pattern": f.pattern, "severity": f.severity, "score": f.score}


def score(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Top-1 accuracy and clean-kernel high-severity FP rate over the rows that have `key`."""
    rows = [r for r in rows if key in r]
    planted = [r for r in rows if r["expect"] is not None]
    clean = [r for r in rows if r["expect"] is None]
    hits = [r for r in planted if r[key] and r[key]["pattern"] == r["expect"]]
    fps = [r for r in clean if r.get(key + "_high")]
    return {
        "planted": len(planted),
        "top1": round(len(hits) / len(planted), 4) if planted else None,
        "clean": len(clean),
        "high_fp_rate": round(len(fps) / len(clean), 4) if clean else None,
        "misattributed": [r["case"] for r in planted if r not in hits],
        "false_positive_cases": [r["case"] for r in fps],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    import msgspec

    from services.decomposer.decompose import decompose
    from services.toolrunner.nvtools import find_tool, gpu_count
    from shared.tools.decompose import DynamicEvidence
    from tests.decomposer import decomposer_corpus as corpus_io

    entries = plan()
    if args.case:
        # In the order given: a short GPU window measures the cases that matter first (run 5 ignored it).
        by_name = {e["case"]: e for e in entries}
        if unknown := [c for c in args.case if c not in by_name]:
            known = ", ".join(sorted(by_name))
            raise SystemExit(f"bench_decomposer_ncu: unknown --case {unknown}; known: {known}")
        entries = [by_name[c] for c in dict.fromkeys(args.case)]
    gpus = 0 if args.dry_run else gpu_count()
    ncu = find_tool("ncu") if gpus else None
    why_not = (
        "not measured: dry run"
        if args.dry_run
        else ""
        if gpus and ncu
        else ("not measured: no GPU" if not gpus else "not measured: ncu not found")
    )
    t0 = time.monotonic()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kpilot-bench-ncu-") as tmp:
        for e in entries:
            art, facts, meta = corpus_io.load(corpus_io.CORPUS / e["case"])
            static = decompose(art, facts).findings
            row: dict[str, Any] = {"case": e["case"], "language": e["language"], "expect": e["expect"]}
            row["top_static"] = _top(static)
            row["top_static_high"] = any(f.severity == "high" for f in static)
            if why_not:
                row["ncu"] = why_not
            elif "skip" in e:
                row["ncu"] = f"not measured: {e['skip']}"
            elif time.monotonic() - t0 > args.budget_s:
                row["ncu"] = f"not measured: --budget-s {args.budget_s:.0f} spent"
            else:
                counters, err = profile(e, ncu or "", Path(tmp), args.case_timeout_s)
                if err:
                    row["ncu"] = err
                else:
                    dyn = msgspec.structs.replace(facts, dynamic=DynamicEvidence(ncu=counters))
                    both = decompose(art, dyn).findings
                    row["ncu"] = "measured"
                    row["top_ncu"] = _top(both)
                    row["top_ncu_high"] = any(f.severity == "high" for f in both)
                    row["key_counters"] = {k: counters[k] for k in KEY_COUNTERS if k in counters}
                    row["counters"] = counters  # every counter, so a scoring fix can be replayed offline
            rows.append(row)
    return {
        "benchmark": "bench_decomposer_ncu",
        "gpu": bool(gpus),
        "ncu": ncu,
        "budget_s": args.budget_s,
        "elapsed_s": round(time.monotonic() - t0, 1),
        "static": score(rows, "top_static"),
        "static_plus_ncu": score(rows, "top_ncu"),
        "measured": sum(1 for r in rows if r["ncu"] == "measured"),
        "plan": entries,
        "cases": rows,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="bench_decomposer_ncu.json", help="JSON result path")
    ap.add_argument("--budget-s", type=float, default=240.0, help="stop starting cases after this long")
    ap.add_argument("--case-timeout-s", type=float, default=60.0, help="ncu timeout per case")
    ap.add_argument("--case", action="append", default=[], help="only this case (repeatable)")
    ap.add_argument("--dry-run", action="store_true", help="list the launch plan; profile nothing")
    args = ap.parse_args(argv)
    result = run(args)
    text = json.dumps(result, indent=1) + "\n"
    Path(args.out).write_text(text)
    fixture_dir = os.environ.get("KPILOT_FIXTURE_OUT")
    if fixture_dir:
        Path(fixture_dir).mkdir(parents=True, exist_ok=True)
        (Path(fixture_dir) / "bench_decomposer_ncu.json").write_text(text)
    for e in result["plan"]:
        how = e.get("skip") or (
            f"grid {e['grid']} block {e['block']}"
            if e["language"] == "cuda"
            else f"grid {e['grid']} {e['elements_per_pointer']} elems/pointer"
        )
        print(f"plan {e['case']:<28} {e['language']:<6} {e['kernel']:<28} {how}")
    for k in ("static", "static_plus_ncu"):
        s = result[k]
        print(
            f"{k}: top-1 {s['top1']} of {s['planted']} planted, "
            f"high-FP rate {s['high_fp_rate']} of {s['clean']}"
        )
    print(f"measured {result['measured']} of {len(result['cases'])} cases; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
