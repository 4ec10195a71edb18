"""GPU benchmark: corpus attribution with ncu evidence (issue #4's `gpu` benchmark).

For every scored corpus case (tests/decomposer/corpus/, Triton and CUDA C++): launch the kernel once
with real tensors (sizes below), profile that launch with the project's ncu worker
(services/toolrunner/tools/ncu_profile/worker.py, run through the sandbox, --clock-control none), feed every numeric
counter to the decomposer as `TaskFacts.dynamic.ncu`, and score top-1 accuracy and high-severity false
positives with static-only and with static+ncu evidence.

Cases are profiled in batches (`--batch-size`, one language each): one process runs each case's warm-up
launch, then its measured launch alone inside a cudaProfilerStart/Stop range; one ncu run
(--profile-from-start off, -k on the batch's kernel names, -c <cases>) profiles every range, and
`split_batch` hands the rows, in launch order, back to their cases. One bad kernel cannot sink its batch
(benchmarks/ncu_schedule.py): a case that held a timed-out batch is set aside and the others profiled
again together; after any other failure each unmeasured case is profiled again on its own.

Bounded: `--budget-s` (default 240) bounds all ncu runs together (none starts with less than
`--case-timeout-s` left, each one's timeout is cut to what is left); `--batch-timeout-s` caps each
batch's ncu run and `--case-timeout-s` each lone run. Without a GPU (or ncu) it exits 0 with every case
"not measured: no GPU" and the launch and batch plans listed.

`--resume RESULT_JSON` finishes a run that ran out of budget (benchmarks/ncu_resume.py): only the cases
it did not measure are profiled, those that timed out alone there last and alone, and the report covers
the whole corpus, each measured row naming the run that measured it (`measured_by`). `--replay
RESULT_JSON` re-scores a finished run's counters on CPU.

    .venv/bin/python benchmarks/bench_decomposer_ncu.py --out bench_decomposer_ncu.json [--dry-run]
        [--resume EARLIER.json | --replay EARLIER.json]
Writes --out, and $KPILOT_FIXTURE_OUT/bench_decomposer_ncu.json when that variable is set.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# stdlib only, found through the path above (the profiling shim imports this module in the sandbox)
from benchmarks import ncu_resume, ncu_schedule
from benchmarks.ncu_schedule import Run

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
    # Its kernel's loads and stores are unmasked: the 65th tile of 128 rows and the 129th K step of 64
    # reach row 8319 and column 8255 (r36/r37 lost the case to an illegal address at 8200 * 8200).
    "scalar_matmul_nodiv": 8320 * 8200 + 8320,
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
    # issue 22 (tests/decomposer/corpus/cases_more.py)
    "store_in_loop": 16384 * 4096,
    "clean_store_after_loop": 16384 * 4096,
    "double_store": E24,
    "clean_single_store": E24,
    "global_roundtrip": E24,
    "clean_registers_no_roundtrip": E24,
    "pointer_chase": E24,
    "clean_tile_sum": 16384 * 4096,
    "add_int64_offsets": E24,
    "repeat_modulo": E24,
    "clean_repeat_2d": E24,
    "oss_tutorial_matmul_kmask": 4096 * 4096,
    "online_softmax_exp": 16384 * 4096,
    "clean_online_softmax_exp2": 16384 * 4096,
    "norm_div_sqrt": 16384 * 4096,
    "oss_tutorial_layernorm_rstd": 16384 * 4096,
    "tanh_libdevice_loop": 16384 * 4096,
    "clean_tanh_sigmoid_loop": 16384 * 4096,
    "barrier_in_loop": 16384 * 4096,
    "oss_tutorial_layernorm_dw_lock": 16384 * 4096,
    "clean_dw_partials": 16384 * 4096,
    "small_tile_add": E24,
    "matmul_bk16": 4096 * 4096,
    "clean_matmul_bk64_4k": 4096 * 4096,
    "colsum_atomic_split": 16384 * 4096,
    "clean_colsum_partials": 16384 * 4096,
    # issue 22, library 60 -> 80 (tests/decomposer/corpus/cases_wide.py)
    "rowmax_no_other": 16384 * 1024,
    "clean_rowmax_other": 16384 * 1024,
    "softmax_no_max_shift": 16384 * 1024,
    "add_bf16_fp32_out": E24,
    "clean_add_bf16": E24,
    "matmul_fp16_acc": 4096 * 4096,
    "clean_matmul_fp32_acc": 4096 * 4096,
    "accumulate_acq_rel": E24,
    "clean_accumulate_relaxed": E24,
    "rowsum_bf16": 16384 * 1024,
    "clean_rowsum_bf16_fp32": 16384 * 1024,
    "scale_div_scalar": E24,
    "clean_scale_reciprocal": E24,
    "clean_rownorm_rowmask": 16384 * 1024,
}
ZEROED = {"lock_ptr"}  # a spin lock must start free (a random 1 would be held forever)
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
                torch.zeros(n, device=device, dtype=t)
                if name in ZEROED
                else torch.randint(0, INT_HIGH, (n,), device=device, dtype=t)
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


def run_batch(cases: list[str], manifest_path: str) -> None:
    """The profiled program's body (runs under ncu): each case's warm-up, then its measured launch alone
    in a cudaProfilerStart/Stop range. The manifest says which cases opened a range, in order, and why
    others failed; it is rewritten as each case starts and ends, so when ncu is killed at its timeout it
    still says which case was in flight then, and since when (`started`, wall-clock seconds)."""
    import torch

    state: dict[str, Any] = {"launched": [], "failed": {}, "finished": [], "started": {}}
    for case in cases:
        state["started"][case] = time.time()
        _write_manifest(manifest_path, state)
        try:
            inputs = make_inputs(case, "cuda")  # per case: strided_gather alone holds 2 GiB per pointer
            launch(case, inputs)  # warm-up: Triton JIT / NVRTC compile outside the profiled range
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            try:
                launch(case, inputs)
                state["launched"].append(case)  # the launch call returned: ncu has a row for it
                torch.cuda.synchronize()
            finally:
                torch.cuda.profiler.stop()
            del inputs
            state["finished"].append(case)
        except Exception as e:  # noqa: BLE001 - one bad case must not stop the batch's others
            text = f"{type(e).__name__}: {e}"  # head (CUDA's own error line) and tail, not the tail alone
            state["failed"][case] = text if len(text) <= 400 else f"{text[:250]} ... {text[-150:]}"
    _write_manifest(manifest_path, state)


def _write_manifest(path: str, state: dict[str, Any]) -> None:
    tmp = f"{path}.tmp"
    Path(tmp).write_text(json.dumps(state))
    os.replace(tmp, path)  # whole or not at all: a kill between two writes leaves the last one


def in_flight(manifest: dict[str, Any]) -> tuple[str, float] | None:
    """The case the launcher had started and neither finished nor failed, with when it started; None
    when every started case ended (or the manifest predates `started`)."""
    ended = set(manifest.get("finished", [])) | set(manifest.get("failed", {}))
    open_ = [(c, t) for c, t in (manifest.get("started") or {}).items() if c not in ended]
    return open_[-1] if open_ else None


_SHIM = '''"""Generated by benchmarks/bench_decomposer_ncu.py: profiles corpus cases (not a task):
{cases!r}
"""
import sys
sys.path.insert(0, {root!r})
from benchmarks import bench_decomposer_ncu as _b

CONFIG = {{}}
SHAPES = {{"micro": {{}}, "full": {{}}}}


def make_inputs(shape, seed, device):
    return ()  # run_batch makes each case's tensors in turn


def launch(inputs):
    _b.run_batch({cases!r}, {manifest!r})


def reference(inputs):
    return None
'''


# The checkout's packages the shim imports inside the sandbox, which binds only shared/ and services/:
# the corpus (tests/decomposer/corpus; H200 run r30 lost every case to "No module named 'tests'") and
# this module (run r31 lost every case to "No module named 'benchmarks'").
SHIM_PACKAGES = ("tests", "benchmarks")


def write_shim(path: Path, cases: list[str], manifest: Path) -> None:
    path.write_text(_SHIM.format(cases=cases, root=str(ROOT), manifest=str(manifest)))


# ---------------------------------------------------------------- batches, profiling and scoring


def plan_batches(entries: list[dict[str, Any]], size: int) -> list[dict[str, Any]]:
    """Launchable entries, in their order, cut into batches of at most `size` cases of one language.

    A language change closes the batch: a CUDA C++ case is hand-written (out-of-bounds or a sticky
    fault would poison the process's context for the Triton cases after it), and keeping the order
    keeps --case's promise that the cases named first are measured first.
    """
    batches: list[dict[str, Any]] = []
    for e in entries:
        if "skip" in e:
            continue
        last = batches[-1] if batches else None
        if last is None or last["language"] != e["language"] or len(last["cases"]) >= size:
            last = {"batch": len(batches), "language": e["language"], "cases": []}
            batches.append(last)
        last["cases"].append(e["case"])
    return batches


def split_batch(csv_text: str, launched: list[str], kernels: dict[str, str]) -> dict[str, dict[str, float]]:
    """Each launched case's numeric counters from one batch's `ncu --csv --page raw` output. Pure.

    ncu profiled one launch per cudaProfilerStart/Stop range, in launch order (the "ID" order of the
    rows); `launched` is the order the launcher opened those ranges. Rows of kernels no case names are
    dropped first (what the -k filter already did). A count or kernel-name mismatch raises NcuCsvError:
    rows that do not line up are not guessed at (the caller retries those cases one by one).
    """
    from shared.parsers.ncu import NcuCsvError, parse_ncu_csv

    def named(row_kernel: str, kernel: str) -> bool:  # select_kernel's rule: exact, or a demangled form
        return row_kernel == kernel or kernel in row_kernel

    wanted = {kernels[c] for c in launched}
    rows = [p for p in parse_ncu_csv(csv_text) if any(named(p.kernel, k) for k in wanted)]
    if len(rows) != len(launched):
        raise NcuCsvError(
            f"{len(rows)} profiled rows for {len(launched)} launched cases ({', '.join(launched)}): "
            "rows and cases do not line up; profile these cases one by one"
        )
    out = {}
    for case, prof in zip(launched, rows, strict=True):
        if not named(prof.kernel, kernels[case]):
            raise NcuCsvError(
                f"row {len(out)} is kernel {prof.kernel!r}, but case {case} launches {kernels[case]!r}"
            )
        out[case] = {k: m.value for k, m in prof.metrics.items() if m.value is not None}
    return out


def profile_batch(batch: list[dict[str, Any]], ncu: str, tmp: Path, timeout_s: float, tag: str) -> Run:
    """One ncu run over the cases of `batch`: counters of the measured ones, a reason for each other, and,
    when it ended without counters, whether it timed out and which case the launcher was in then."""
    import msgspec

    from services.toolrunner.sandbox import Limits, run_worker
    from services.toolrunner.tools.ncu_profile.worker import NcuWorkerRequest, NcuWorkerResult
    from services.toolrunner.worker_lib.launch_task import LaunchTaskRequest
    from shared.parsers.ncu import NcuCsvError, requested_metrics

    cases = [e["case"] for e in batch]
    kernels = {e["case"]: e["kernel"] for e in batch}
    shim, manifest = tmp / f"task_{tag}.py", tmp / f"launched_{tag}.json"
    write_shim(shim, cases, manifest)
    names = "|".join(re.escape(k) for k in sorted(set(kernels.values())))
    wreq = NcuWorkerRequest(
        ncu=ncu,
        kernel=tag,
        kernel_regex=f"^({names})$",
        launch_count=len(cases),
        metrics=requested_metrics(EXTRA_METRICS),
        report_dir=str(tmp / "reports"),
        timeout_s=max(10.0, timeout_s - 15.0),  # the worker's --version and --query-metrics come first
        # run_batch does each case's warm-up and profiler range, so launch_task adds neither
        launch=LaunchTaskRequest(task_path=str(shim), shape="full", profile_range=False, warmup=False),
    )
    t = time.monotonic()
    outcome = run_worker(
        "services.toolrunner.tools.ncu_profile.worker",
        msgspec.json.encode(wreq),
        Limits(timeout_s=timeout_s, memory_mb=None, gpu=0),
        writable=(tmp,),  # the shim task writes its launch manifest there; ncu its reports
        packages=SHIM_PACKAGES,
    )
    wall, ended = time.monotonic() - t, time.time()
    state = _manifest(manifest)
    failed = {c: f"not measured: launch failed: {m}" for c, m in state.get("failed", {}).items()}
    open_ = in_flight(state)
    flight = (open_[0], round(ended - open_[1], 1)) if open_ else None

    def missed(why: str, timed_out: bool = False) -> Run:
        # the launcher's own words beat ncu's about a case it could not run
        return Run({}, {c: failed.get(c, why) for c in cases}, timed_out, flight, wall)

    if outcome.status != "ok" or outcome.result is None:
        why = f"not measured: ncu worker {outcome.status}: {outcome.message[-300:]}"
        return missed(why, outcome.status == "timeout")
    res = msgspec.json.decode(outcome.result, type=NcuWorkerResult)
    if not res.ok:
        why = f"not measured: {res.message[-300:]}"
        return missed(why, ncu_resume.is_timeout(why))
    try:
        counters = split_batch(res.csv, state["launched"], kernels)
    except (ValueError, KeyError) as e:  # NcuCsvError is a ValueError
        return missed(
            f"not measured: {e}" if isinstance(e, NcuCsvError) else f"not measured: no manifest: {e}"
        )
    for c in failed:
        counters.pop(c, None)  # launched, then its synchronize failed: its row is not trusted
    rest = {c: failed.get(c, "not measured: no profiled row") for c in cases if c not in counters}
    return Run(counters, rest, False, None, wall)


def _manifest(path: Path) -> dict[str, Any]:
    """run_batch's manifest ({} when it left none)."""
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


RESUME_NOTE = (
    "cases the run in resumed_from measured keep its counters (measured_by names it); this run profiled the "
    "others; every case's findings and the scores come from the pattern library of this checkout"
)
REPLAY_NOTE = (
    "counters measured on the GPU by the run named in replayed_from; findings, ranking and scores "
    "recomputed from them on CPU by the pattern library of this checkout"
)


def _top(findings: list) -> dict[str, Any] | None:
    if not findings:
        return None
    f = findings[0]
    return {"pattern": f.pattern, "severity": f.severity, "score": f.score}


def judged(findings: list) -> dict[str, Any]:
    """What scoring needs of one decomposition: the top finding, the first three patterns, whether any is
    high, and whether a measured time put every finding at info (the kernel within 10 % of its roofline)."""
    return {
        "top": _top(findings),
        "top3": [f.pattern for f in findings[:3]],
        "high": any(f.severity == "high" for f in findings),
        "at_roof": bool(findings) and all("cost not borne out" in " ".join(f.evidence) for f in findings),
        "named": [f.pattern for f in findings],
    }


def score(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Top-1 / top-3 attribution and clean-kernel high-severity false positives over the rows that have
    `key` (a `judged` record), for the whole corpus and per kind of case (seed, planted, clean, oss,
    no_cost: tests/decomposer/corpus/cases_more.py).

    planted: the expected pattern ranks first (top-1) or in the first three (top-3). A planted case whose
    measured time is within 10 % of its roofline (every finding info) is a smell without cost there: it is
    counted apart ("at_roof") and right when the pattern is still named. no_cost: right when the pattern is
    named (top-3) and nothing is high. clean: a high finding is a false positive."""
    rows = [r for r in rows if r.get(key)]

    def one(rs: list[dict[str, Any]]) -> dict[str, Any]:
        planted = [r for r in rs if r["expect"] is not None and r.get("kind") != "no_cost"]
        at_roof = [r for r in planted if r[key]["at_roof"]]
        costed = [r for r in planted if r not in at_roof]
        hit1 = [r for r in costed if r[key]["top"] and r[key]["top"]["pattern"] == r["expect"]]
        hit3 = [r for r in costed if r["expect"] in r[key]["top3"]]
        nocost = [r for r in rs if r.get("kind") == "no_cost"]
        nocost_ok = [r for r in nocost if r["expect"] in r[key]["top3"] and not r[key]["high"]]
        clean = [r for r in rs if r["expect"] is None]
        fps = [r for r in clean if r[key]["high"]]
        return {
            "planted": len(costed),
            "top1": round(len(hit1) / len(costed), 4) if costed else None,
            "top3": round(len(hit3) / len(costed), 4) if costed else None,
            "misattributed": [r["case"] for r in costed if r not in hit1],
            "planted_at_roof": len(at_roof),
            "at_roof_still_named": sum(1 for r in at_roof if r["expect"] in r[key]["named"]),
            "no_cost": len(nocost),
            "no_cost_named_not_high": len(nocost_ok),
            "clean": len(clean),
            "high_fp": len(fps),
            "high_fp_rate": round(len(fps) / len(clean), 4) if clean else None,
            "false_positive_cases": [r["case"] for r in fps],
        }

    kinds = sorted({r.get("kind", "seed") for r in rows})
    return {**one(rows), "by_kind": {k: one([r for r in rows if r.get("kind", "seed") == k]) for k in kinds}}


def measure(
    entries: list[dict[str, Any]],
    batches: list[dict[str, Any]],
    set_aside: dict[str, str],
    ncu: str,
    args: argparse.Namespace,
) -> ncu_schedule.Schedule:
    """Profile `batches`, then the `set_aside` cases one by one, under the budgets in `args`
    (benchmarks/ncu_schedule.py: a case that holds its batch is set aside, the rest re-batched)."""
    by_name = {e["case"]: e for e in entries}
    budgets = ncu_schedule.Budgets(args.budget_s, args.batch_timeout_s, args.case_timeout_s)
    with tempfile.TemporaryDirectory(prefix="kpilot-bench-ncu-") as tmp:

        def profile(cases: list[str], timeout_s: float, tag: str) -> Run:
            return profile_batch([by_name[c] for c in cases], ncu, Path(tmp), timeout_s, tag)

        return ncu_schedule.measure(batches, set_aside, profile, budgets)


def _select(entries: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    """--case: those entries, in the order given (a short GPU window measures the cases that matter first;
    run 5 ignored it)."""
    by_name = {e["case"]: e for e in entries}
    if unknown := [c for c in names if c not in by_name]:
        known = ", ".join(sorted(by_name))
        raise SystemExit(f"bench_decomposer_ncu: unknown --case {unknown}; known: {known}")
    return [by_name[c] for c in dict.fromkeys(names)]


def run(args: argparse.Namespace) -> dict[str, Any]:
    import msgspec

    from benchmarks.ledger import run_stamp
    from services.decomposer.decompose import decompose
    from services.toolrunner.nvtools import find_tool, gpu_count
    from shared.tools.decompose import DynamicEvidence
    from tests.decomposer import decomposer_corpus as corpus_io

    if args.batch_size < 1:
        raise SystemExit(f"bench_decomposer_ncu: --batch-size {args.batch_size}: give 1 or more")
    if args.replay and args.resume:
        raise SystemExit(
            "bench_decomposer_ncu: --replay re-scores a finished run, --resume finishes one: give one of them"
        )
    entries = _select(plan(), args.case) if args.case else plan()
    stamp = run_stamp()
    # what a measured row names as its run: the ledger's run id, else this run's --out path (as a later
    # --resume of that file would name it)
    this_run = stamp["run_id"] if stamp["run_id"] != ncu_resume.NOT_IN_LEDGER else str(args.out)
    earlier_path = args.replay or args.resume
    try:
        earlier = ncu_resume.load(earlier_path) if earlier_path else None
    except ncu_resume.ResumeError as e:
        raise SystemExit(f"bench_decomposer_ncu: {e}") from e
    label = ncu_resume.run_label(earlier_path, earlier) if earlier is not None else ""
    before = ncu_resume.measured(earlier, label) if earlier is not None else {}
    todo = [e for e in entries if e["case"] not in before]
    set_aside: dict[str, str] = {}
    if args.resume and earlier is not None:  # a case that hung alone there is tried last here, alone
        hung = ncu_resume.timed_out_alone(earlier)
        launchable = {e["case"] for e in todo if "skip" not in e}
        set_aside = {c: f"timed out alone in {label}: {w}" for c, w in hung.items() if c in launchable}
        todo = [e for e in todo if e["case"] not in set_aside]
    if args.replay and earlier is not None:  # score an earlier run's counters with today's library: no GPU
        gpus, ncu, batches = int(earlier["gpu"]), earlier["ncu"], earlier["batches"]
        why_not = "" if gpus and ncu else "not measured: the replayed run measured nothing"
    else:
        batches = plan_batches(todo, args.batch_size)
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
    sched = ncu_schedule.Schedule()
    if args.replay and earlier is not None:
        sched.why = {c["case"]: c["ncu"] for c in earlier["cases"] if "counters" not in c}
    elif not why_not and (batches or set_aside):
        sched = measure(entries, batches, set_aside, ncu or "", args)
    elif set_aside:
        not_run = f"not run: {why_not.removeprefix('not measured: ')}"
        sched.set_aside = [{"case": c, "why": w, "ncu": not_run} for c, w in set_aside.items()]
    counters_of = {c: k for c, (k, _) in before.items()} | sched.counters
    measured_by = {c: who for c, (_, who) in before.items()} | dict.fromkeys(sched.counters, this_run)
    batch_of = {c: b["batch"] for b in batches for c in b["cases"]}
    rows: list[dict[str, Any]] = []
    for e in entries:
        art, facts, meta = corpus_io.load(corpus_io.CORPUS / e["case"])
        static = decompose(art, facts).findings
        row: dict[str, Any] = {"case": e["case"], "language": e["language"], "expect": e["expect"]}
        row["kind"] = meta.get("kind", "seed")
        row["top_static"] = _top(static)
        row["top_static_high"] = any(f.severity == "high" for f in static)
        row["static"] = judged(static)
        row["batch"] = batch_of.get(e["case"])
        if e["case"] in counters_of:
            counters = counters_of[e["case"]]
            dyn = msgspec.structs.replace(facts, dynamic=DynamicEvidence(ncu=counters))
            both = decompose(art, dyn).findings
            row["ncu"] = "measured"
            row["measured_by"] = measured_by[e["case"]]
            row["top_ncu"] = _top(both)
            row["top_ncu_high"] = any(f.severity == "high" for f in both)
            row["with_ncu"] = judged(both)
            row["key_counters"] = {k: counters[k] for k in KEY_COUNTERS if k in counters}
            row["counters"] = counters  # every counter, so a scoring fix can be replayed offline
        elif why_not:
            row["ncu"] = why_not + (f" (set aside: {set_aside[e['case']]})" if e["case"] in set_aside else "")
        elif "skip" in e:
            row["ncu"] = f"not measured: {e['skip']}"
        elif e["case"] in sched.why:
            row["ncu"] = sched.why[e["case"]]
        else:
            row["ncu"] = "not measured: no profiled row"
        if e["case"] in sched.timed_out_alone or (e["case"] in set_aside and e["case"] not in counters_of):
            row["timed_out_alone"] = True  # here or in the resumed run: a later --resume tries it last, alone
        rows.append(row)
    return {
        "benchmark": "bench_decomposer_ncu",
        "run_stamp": stamp,
        "gpu": bool(gpus),
        "ncu": ncu,
        "budget_s": args.budget_s,
        "batch_size": args.batch_size,
        "batch_timeout_s": args.batch_timeout_s,
        "case_timeout_s": args.case_timeout_s,
        "elapsed_s": earlier["elapsed_s"] if args.replay and earlier else round(time.monotonic() - t0, 1),
        **({"replayed_from": args.replay, "replay": REPLAY_NOTE} if args.replay else {}),
        **(
            {
                "resumed_from": {
                    "path": args.resume,
                    "run": label,
                    "measured": len(before),
                    "note": RESUME_NOTE,
                    "batches": earlier["batches"],
                }
            }
            if args.resume and earlier is not None
            else {}
        ),
        "static": score(rows, "static"),
        "static_plus_ncu": score(rows, "with_ncu"),
        "measured": sum(1 for r in rows if r["ncu"] == "measured"),
        "measured_this_run": sum(1 for r in rows if r["case"] in sched.counters),
        "plan": entries,
        "batches": batches,
        "set_aside": sched.set_aside,
        "cases": rows,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="bench_decomposer_ncu.json", help="JSON result path")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=240.0,
        help="all ncu runs together: none starts with less than --case-timeout-s left, none runs past it",
    )
    # 16: the 54 launchable cases run as 4 batches in corpus order (Triton 14, CUDA 11, Triton 16 and 13),
    # so the ~12 s a lone case cost on the H200 (run 5: 15 cases in 180 s, mostly process start, CUDA
    # init and ncu start-up) is paid 4 times, not 54; and a batch that fails costs at most 16 lone retries.
    ap.add_argument("--batch-size", type=int, default=16, help="cases profiled by one ncu run")
    # 300 s: 16 cases at run 5's 12 s each (192 s) if nothing is saved by batching, plus margin.
    ap.add_argument("--batch-timeout-s", type=float, default=300.0, help="ncu timeout per batch")
    ap.add_argument("--case-timeout-s", type=float, default=60.0, help="ncu timeout per lone run")
    ap.add_argument("--case", action="append", default=[], help="only this case (repeatable)")
    ap.add_argument("--dry-run", action="store_true", help="list the launch plan; profile nothing")
    ap.add_argument(
        "--replay", metavar="RESULT_JSON", help="re-score an earlier run's kept counters (no GPU, no ncu)"
    )
    ap.add_argument(
        "--resume",
        metavar="RESULT_JSON",
        help="profile only the cases that earlier run did not measure (those that timed out alone there: "
        "last, alone) and write one report of both runs",
    )
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
    for b in result["batches"]:
        done = f" {b['outcome']} in {b.get('wall_s', 0)} s" if "outcome" in b else ""
        print(f"batch {b['batch']} {b['language']:<6} {len(b['cases'])} cases{done}: {' '.join(b['cases'])}")
        again = b.get("rerun")
        while again:  # a case held the batch: set aside, the others profiled again together
            print(f"  held by {b.get('set_aside')}; again: {again['batch']} {again.get('outcome', '')}")
            b, again = again, again.get("rerun")
    for a in result["set_aside"]:
        print(f"set aside {a['case']} ({a['why']}): {a['ncu']}")
    if "resumed_from" in result:
        r = result["resumed_from"]
        print(f"resumed from {r['path']} ({r['run']}: {r['measured']} cases measured there)")
    for k in ("static", "static_plus_ncu"):
        s = result[k]
        print(
            f"{k}: top-1 {s['top1']} top-3 {s['top3']} of {s['planted']} planted "
            f"(+{s['planted_at_roof']} at their roofline, {s['at_roof_still_named']} still named), "
            f"no-cost smells {s['no_cost_named_not_high']}/{s['no_cost']} named and not high, "
            f"high FP {s['high_fp']} of {s['clean']} clean"
        )
    print(
        f"measured {result['measured']} of {len(result['cases'])} cases ({result['measured_this_run']} by "
        f"this run); wrote {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
