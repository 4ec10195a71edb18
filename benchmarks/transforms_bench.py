"""Each transformation of shared/transforms timed on a suite kernel where it applies: the task (baseline)
against its transformed candidate, interleaved ABBA by the toolrunner's bench_ab (one timing pipeline),
on the task's full shape, same config on both sides except the knob the transformation adds.

    python3 benchmarks/transforms_bench.py --out OUT/transforms.json [--rep-ms 100] [--only NAME ...]

Without a GPU every row says "not measured: no GPU" (no number is invented). Writes one JSON record:
rows (transformation, kernel, task, params, configs, baseline/candidate median ms, speedup and its 95 %
bootstrap CI), device, driver, commit.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from services.toolrunner.tool import ToolFailure
from services.toolrunner.tools.bench_ab.spec import run as bench_ab
from shared.messages import Scalar
from shared.tools.bench import BenchABInput, BenchSubject
from shared.transforms.base import Refused
from shared.transforms.table import apply


class Case(msgspec.Struct, frozen=True, kw_only=True):
    transform: str
    task: str
    params: dict[str, Scalar] = {}
    config: dict[str, Scalar] = {}  # overrides on both sides (the task's CONFIG otherwise)
    then: list[str] = []  # transformations stacked after the first (default parameters), as a job stacks
    why: str = ""


# One kernel per transformation where its precondition holds; the configs are the suite's own starts,
# or a Hopper-sized tile where the start is too small for the rewrite to matter (said in `why`).
CASES = (
    Case(transform="k_pipeline", task="benchmarks/tasks/l2_bmm.py", params={"stages": 3},
         why="the task's start: 64x64x32, 4 warps, num_stages=1 (no prefetch)"),
    Case(transform="k_pipeline", task="benchmarks/tasks/l2_bmm.py", params={"stages": 4},
         config={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8},
         why="a wgmma-sized tile (4 stages x 16 KB of A+B), launch num_stages=1: only the loop's stages"),
    Case(transform="grouped_order", task="benchmarks/tasks/l2_bmm.py", params={"group_m": 8},
         config={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3},
         why="a tuned tile, so L2 reuse (not latency) is what the order can change"),
    Case(transform="rows_per_program", task="benchmarks/tasks/l1_rms_norm.py", params={"rows": 4},
         why="32768 rows of 4096: 4 rows per program = 8192 programs"),
    Case(transform="rows_per_program", task="benchmarks/tasks/l1_row_softmax.py", params={"rows": 2}),
    Case(transform="persistent", task="benchmarks/tasks/l1_rms_norm.py", params={"programs": 528},
         why="32768 rows on 528 programs (4 per SM)"),
    Case(transform="persistent", task="benchmarks/tasks/l1_gelu.py", params={"programs": 528},
         why="2^28 elements: 262144 blocks of 1024 on 528 programs"),
    Case(transform="exp2_fold", task="benchmarks/tasks/l1_row_softmax.py"),
    Case(transform="exp2_fold", task="benchmarks/tasks/l1_cross_entropy.py",
         why="the straightforward kernel: two tl.exp per logit"),
    Case(transform="chunk_max", task="benchmarks/tasks/l1_cross_entropy.py",
         why="per-lane running max -> chunk max: one rescale exp per chunk, one tl.exp per logit"),
    Case(transform="chunk_max", task="benchmarks/tasks/l1_cross_entropy.py",
         config={"BLOCK_V": 4096, "num_warps": 8, "num_stages": 2},
         why="alone at the stacked row's config: r32 timed it 0.41x at the task's start config"),
    Case(transform="chunk_max", task="benchmarks/tasks/l1_cross_entropy.py", then=["exp2_fold"],
         config={"BLOCK_V": 4096, "num_warps": 8, "num_stages": 2},
         why="stacked: one exp2 per logit, as the removed CHUNK_MAX=1 switch; at that switch's H200 pick (run 16)"),
    Case(transform="split_k", task="benchmarks/tasks/l2_matmul_tall_skinny.py", params={"split": 4},
         why="M 65536 x N 128 x K 4096 at the task's start config"),
    Case(transform="split_k", task="benchmarks/tasks/l1_col_reduce.py", params={"split": 8},
         config={"BLOCK_M": 8, "BLOCK_N": 32, "num_warps": 1},
         why="16384 x 8192 column sums, 256 column blocks: the removed SPLIT_M=8 switch's exhaustive optimum"),
    Case(transform="even_k", task="benchmarks/tasks/l2_bmm.py",
         config={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3},
         why="K = 1024: no tail; what dropping the K bound from the interior loads is worth"),
    Case(transform="even_k", task="benchmarks/tasks/l2_matmul_irregular.py",
         why="K = 4001: a 33-wide tail; odd row strides still forbid 16 B loads (aligned_copies' job)"),
    Case(transform="aligned_copies", task="benchmarks/tasks/l2_matmul_irregular.py", params={"align": 64},
         why="K = 4001, N = 6007: odd row pitches; the copies are inside the timed call"),
    Case(transform="aligned_copies", task="benchmarks/tasks/l2_matmul_irregular.py", params={"align": 64},
         then=["even_k"], why="stacked: aligned pitch + unmasked interior K tiles (A's loads 16 B; "
         "B keeps its N mask)"),
    Case(transform="two_stage_reduce", task="tests/transforms/tasks/atomic_sum.py",
         why="2^26 floats, 262144 programs adding to one fp32 counter"),
    Case(transform="cuda_launch_bounds", task="benchmarks/tasks/l1_transpose_cuda.py", params={"min_blocks": 1},
         why="the naive kernel; launch bounds = BLOCK_X * BLOCK_Y threads"),
    Case(transform="aligned_copies", task="benchmarks/tasks/l2_matmul_irregular.py",
         params={"extents": 1, "align": 64},
         why="K and N rounded up to 64 as well: every operand load 16 B (the removed PAD_ALIGN=1 variant's PTX)"),
    Case(transform="cuda_tiled_transpose", task="benchmarks/tasks/l1_transpose_cuda.py",
         why="16384^2 fp32 at 32 x 8 threads: the removed USE_TILE=1 path, reached by the transformation"),
    Case(transform="tiled_transpose", task="tests/transforms/tasks/transpose_rows.py", params={"tile": 32},
         why="8192^2 fp32, one program per row: the strided store becomes 32-row tiles through tl.trans"),
    Case(transform="cuda_smem_pad", task="tests/transforms/tasks/transpose_tile_cuda.py", params={"pad": 1},
         why="unpadded 32x32 fp32 tile: the column read is 32-way bank conflicted"),
    *(Case(transform="split_key_loop", task=f"benchmarks/tasks/l3_attention_{v}.py", config=cfg,
           why="the tile the suite shipped with the hand-written SPLIT_MASK = 1 (H200 suite run)")
      for v, cfg in (("d64", {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3}),
                     ("d64_causal", {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3}),
                     ("d128", {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3}),
                     ("d128_causal", {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3}))),
    Case(transform="causal_tile_skip", task="tests/transforms/tasks/attention_causal_all_keys.py",
         config={"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3},
         why="causal d64 whose key loop visits every key: about half the tiles are wholly masked"),
    Case(transform="sparse_block_skip", task="benchmarks/tasks/l4_block_sparse_attention.py",
         why="the task's start: every key block visited, about 3 in 4 masked out by the layout"),
    Case(transform="sparse_block_skip", task="benchmarks/tasks/l4_block_sparse_attention.py",
         config={"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 4},
         why="the tile the suite shipped (with SKIP = 0)"),
    Case(transform="eviction_policy", task="benchmarks/tasks/l1_gelu.py", params={"policy": "evict_first"}),
    Case(transform="eviction_policy", task="benchmarks/tasks/l1_row_softmax.py",
         params={"policy": "evict_last"}, why="the second pass re-reads the row: keep it in L2"),
    Case(transform="tma_loads", task="benchmarks/tasks/l2_bmm.py", params={"operands": "ab"},
         config={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3},
         why="a tuned tile, both sides pipelined by num_stages=3: TMA against cp.async tile loads"),
    Case(transform="tma_loads", task="benchmarks/tasks/l2_matmul_square.py", params={"operands": "ab"},
         config={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
         why="8192^3 at a Hopper-sized tile"),
    Case(transform="fuse_epilogue", task="tests/transforms/tasks/matmul_then_gelu.py",
         config={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
         why="bf16 8192x8192x4096 GEMM then an exact-GELU kernel over its output: the GELU moves into the "
         "GEMM's epilogue (one 128 MiB round trip less), at a tuned GEMM tile"),
    Case(transform="relayout_intermediate", task="benchmarks/tasks/l3_pipeline.py",
         params={"follow": "consumer"}, why="x token-major instead of feature-major (the removed X_LAYOUT 1)"),
)


def _commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=False, capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown (no git)"
    return out.stdout.strip() or "unknown (no .git in this copy)"


def _cfg(task: Path) -> dict[str, Scalar]:
    from services.planner.patcher import TaskSource  # the patcher's reader of CONFIG literals
    return dict(TaskSource(task.read_text(), str(task)).literal("CONFIG") or {})


def run_case(case: Case, scratch: Path, rep_ms: float) -> dict:
    task = ROOT / case.task
    row: dict = {"transform": case.transform, "task": case.task, "params": case.params, "why": case.why}
    got = apply(task.read_text(), case.transform, case.params, filename=task.name)
    for name in case.then:
        if isinstance(got, Refused):
            break
        got = apply(got.source, name, {}, filename=task.name)
    if isinstance(got, Refused):
        return row | {"status": "refused", "reason": got.reason}
    row["then"] = case.then
    cand = scratch / f"{case.transform}_{task.stem}_{len(list(scratch.iterdir()))}.py"
    cand.write_text(got.source)
    base_cfg = _cfg(task) | case.config
    cand_cfg = _cfg(cand) | case.config
    row |= {"kernel": got.kernel or "primary", "params": got.params, "baseline_config": base_cfg,
            "candidate_config": cand_cfg, "shape": "full"}
    req = BenchABInput(a=BenchSubject(task_path=str(task), config=case.config, label="baseline"),
                       b=BenchSubject(task_path=str(cand), config=case.config, label=case.transform),
                       shape="full", rep_ms=rep_ms, timeout_s=120.0)
    t0 = time.perf_counter()
    try:
        out = bench_ab(req)
    except ToolFailure as e:
        why = "not measured: no GPU" if e.code == "unavailable" else f"not measured: {e.code}: {e}"
        return row | {"status": "not_measured", "reason": why}
    return row | {
        "status": "measured",
        "baseline_ms": out.a.stats.median_ms,
        "candidate_ms": out.b.stats.median_ms,
        "speedup": out.speedup,
        "ci95": [out.ci_low, out.ci_high],
        "method": msgspec.to_builtins(out.method),
        "provenance": msgspec.to_builtins(out.provenance),
        "wall_s": round(time.perf_counter() - t0, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rep-ms", type=float, default=100.0, help="timed milliseconds per side (do_bench: 100)")
    ap.add_argument("--only", nargs="*", default=[], help="transformation names to run (default: all)")
    ap.add_argument("--commit", default="", help="the commit measured (default: git rev-parse HEAD)")
    args = ap.parse_args(argv)
    rows: list[dict] = []
    commit = args.commit or _commit()

    def write() -> None:  # after every row: a run cut short by its time limit keeps what it measured
        prov = next((r["provenance"] for r in rows if r["status"] == "measured"), {})
        record = {"rows": rows, "device": prov.get("device", "none"), "driver": prov.get("driver", ""),
                  "commit": commit, "method": "bench_ab (ABBA interleaved, 95 % bootstrap CI of the median "
                  "ratio), full shape"}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=2) + "\n")

    with tempfile.TemporaryDirectory(prefix="kpilot-transforms-") as tmp:
        for case in CASES:
            if args.only and case.transform not in args.only:
                continue
            row = run_case(case, Path(tmp), args.rep_ms)
            rows.append(row)
            write()
            shown = (f"{row['speedup']:.3f}x [{row['ci95'][0]:.3f}, {row['ci95'][1]:.3f}]"
                     if row["status"] == "measured" else row.get("reason", ""))
            name = "+".join([case.transform, *case.then])
            print(f"{name:26s} {Path(case.task).stem:20s} {shown}", flush=True)
    write()
    print(f"wrote {args.out} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
