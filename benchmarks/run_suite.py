"""The kernel benchmark suite runner (`make bench-kernels`): search each task's config, then report it.

For each task in benchmarks/tasks/ (or `--tasks a,b`):
  static   SPACE size, configs left after the planner's static pruning, compile of the starting config
  search   the planner's config search (services.planner.search.next_configs, the search the rules policy
           runs) round by round, each round timed by the `autotune` tool on the full shape; without the
           planner, the `autotune` tool over SPACE (the row's `search` field says which ran)
  check    run_correctness of the best config on the GPU (micro + edge shapes)
  compare  bench_ab: the starting config (a) against the best (b), interleaved, with a bootstrap interval
  context  roofline fraction and speedups over the library baselines, from baselines.py's JSON of the same
           session (`--baselines PATH`, measured first unless `--no-baselines`)
Rows carry `task, level, device, driver, cuda, triton, torch, gpus, target, meets_target` and write
benchmarks/results/kernels.json and kernels.md.

`--dry-run` (CPU, no GPU needed) runs the static layers only; every timing field is None and the row says
"not measured: no GPU". `--budget-s` bounds the whole run's wall time (split evenly over the tasks left);
a task's search stops between rounds when its share is spent.

    .venv/bin/python benchmarks/run_suite.py --dry-run --tasks l1_vector_add,l2_matmul_square
    .venv/bin/python benchmarks/run_suite.py --tasks l1_relu,l2_matmul_square --budget-s 300

Not the product's path (issue 19): this re-wires search, correctness and timing in-process and copies the
verifier's acceptance rule; the planner's job loop (and so its transformations), the funnel's static checks
and honesty probe and the critic never run here. `benchmarks/suite_loop.py` runs the suite through the
shipped loop (`kpilot up` + one `kpilot optimize` job per task) and is where the suite's after-transformation
rows come from. This file stays beside it for what the loop driver does not do: the config search timed
config by config with `autotune` (the `evaluations` traces search_eff.py reads, and `search_loop` /
`launch_programs` / `problem`, which search_replay.py replays against the exhaustive tables), the static
funnel counts over SPACE (`--dry-run`), the library baselines and roofline measured in the same session
(`--baselines`), the `Report` / `write` format that kernels.json and merge_baselines.py use, and the
recorded 'before' rows themselves.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.suite import SuiteError, TaskMeta, select
from services.verifier.policy import VerifyPolicy

RESULTS = ROOT / "benchmarks" / "results"
NO_GPU = "not measured: no GPU"
# Enumerating a SPACE for static pruning costs ~50 us per config in the planner's estimator: 50k configs
# is ~2.5 s; the pipeline task's 138k-config space is left uncounted rather than slowing every run.
MAX_ENUMERATE = 50_000
# Autotune budgets per config in the search: Triton's defaults (25 ms warm-up, 100 ms reps) cost ~0.2 s
# of GPU per config plus compile; the suite has ~20 GPU minutes for ~22 tasks, so searches use 10 / 40.
SEARCH_WARMUP_MS = 10.0
SEARCH_REP_MS = 40.0
MAX_ROUNDS = 8  # the planner's search converges in 3-6 rounds of 4 on the examples' spaces
# After its search a task still runs correctness (two fresh processes) and bench_ab (one). An estimate,
# not a per-tool measurement: on the H200 (run 4) the eight tasks that searched nothing took 25-36 s in
# all, load and compile included. The search stops this long before its share.
TAIL_S = 20.0
CORRECTNESS_FALLBACKS = 2  # next-fastest configs checked when the fastest fails correctness
# The verifier's acceptance rule, from its policy: a speedup's CI low must exceed 1 + min_gain.
MIN_GAIN = VerifyPolicy().min_gain
_STATIC_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="suite-static")
FALLBACK_MAX_CONFIGS = 32


class Timing(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    median_ms: float
    p20_ms: float
    p80_ms: float
    n: int


class Evaluation(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    config: dict[str, Any]
    median_ms: float | None  # None: failed to compile or launch (error says why)
    error: str = ""
    round: int = 0
    t_s: float = 0.0  # seconds since the search started, when this result came back


class Row(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task: str
    level: str
    kind: str
    device: str
    driver: str
    cuda: str
    triton: str
    torch: str
    gpus: int
    target: str  # what the row is held against, e.g. ">= 0.9x matmul"
    meets_target: bool | None  # None when the figure it needs was not measured
    search: str  # which search ran
    start_config: dict[str, Any]
    best_config: dict[str, Any] | None = None
    before: Timing | None = None  # bench_ab side a (start config), full shape
    after: Timing | None = None  # bench_ab side b (best config)
    speedup: float | None = None  # median(before) / median(after)
    speedup_ci: list[float] | None = None  # 95 % bootstrap interval (None: nothing shipped, speedup 1)
    outcome: str = ""  # "patched: ..." or "start kept: <why>"
    candidate_speedup: float | None = None  # bench_ab of the best searched config, shipped or not
    candidate_ci: list[float] | None = None
    roofline_bound_ms: float | None = None
    roofline_fraction: float | None = None  # roofline_bound_ms / after.median_ms
    baselines_ms: dict[str, float | None] = {}
    speedup_vs: dict[str, float | None] = {}  # baseline median / after median (> 1: ours is faster)
    wall_s_to_best: float | None = None
    wall_s: float = 0.0
    gpu_s: float | None = None  # wall seconds of the GPU tool calls (autotune, correctness, bench_ab)
    funnel: dict[str, int | None] = {}
    correct: bool | None = None
    correctness: str = ""
    evaluations: list[Evaluation] = []
    not_measured: str = ""
    notes: list[str] = []
    roofline: dict[str, Any] = {}  # the measured roof this row is judged against (its own session's)


class Report(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    dry_run: bool
    budget_s: float | None
    roofline: dict[str, Any] = {}
    rows: list[Row]
    command: str = ""
    earlier_commands: list[str] = []  # --append: the runs that measured the kept rows


# ---------------------------------------------------------------------------------------------- static


def _planner() -> Any:
    """services.planner.search if helper G's planner is present, else None (then autotune searches)."""
    if not (ROOT / "services" / "planner" / "policies").is_dir():
        return None
    try:
        from services.planner import search
    except ImportError:
        return None
    return search if hasattr(search, "next_configs") else None


def _uses_dot(path: str) -> bool:
    return "tl.dot(" in Path(path).read_text()


def space_size(space: dict[str, list[Any]]) -> int:
    return math.prod(len(v) for v in space.values()) if space else 0


def static_layers(manifest: Any, meta: TaskMeta, planner: Any) -> tuple[dict[str, int | None], list[str]]:
    """SPACE size, configs the planner's static rules keep, and the compile of the starting config."""
    notes: list[str] = []
    funnel: dict[str, int | None] = {"space": space_size(manifest.space), "static_pass": None}
    if planner is not None and funnel["space"] and funnel["space"] <= MAX_ENUMERATE:
        p = problem(manifest, meta, planner)
        every = planner.all_configs(p.space, p.config)
        funnel["static_pass"] = sum(1 for c in every if not planner.prune_reasons(c, p))
    elif planner is not None:
        notes.append(f"static_pass not counted: {funnel['space']} configs > {MAX_ENUMERATE}")
    # Triton through its compiler, CUDA C++ through nvcc: the compile tool picks by the task kind.
    from services.toolrunner.tools.compile.spec import run as compile_run
    from shared.tools.compile import CompileInput

    try:
        compile_run(CompileInput(task_path=meta.path))
        funnel["compiled_start"] = 1
    except Exception as e:  # noqa: BLE001 - a tool failure is a result of the row
        funnel["compiled_start"] = 0
        notes.append(f"compile of the starting config failed: {getattr(e, 'message', e)}")
    return funnel, notes


def problem(manifest: Any, meta: TaskMeta, planner: Any, programs: dict[str, int] | None = None) -> Any:
    return planner.Problem(
        config=dict(manifest.config),
        space=dict(manifest.space),
        full_shape=dict(manifest.shapes.full),
        other_shapes=[planner.int_dims(s) for s in (manifest.shapes.micro, *manifest.shapes.edge)],
        dtype=manifest.dtype,
        dot=_uses_dot(meta.path),
        programs=programs or {},
    )


def launch_programs(manifest: Any, meta: TaskMeta, planner: Any) -> tuple[dict[str, int], str]:
    """Programs per config at the full shape from the task's own launch() (the launch_grid tool, CPU, ~2 s),
    for the planner's waves estimate; ({}, why) when they cannot be recorded, and the model is used."""
    from services.toolrunner.tool import ToolFailure
    from services.toolrunner.tools.launch_grid import spec as launch_grid
    from shared.tools.grid import MAX_CONFIGS, LaunchGridInput

    if manifest.kind != "triton" or not manifest.space:
        return {}, ""
    if (n := space_size(manifest.space)) > MAX_CONFIGS:
        return {}, f"launch grids not recorded: {n} configs > {MAX_CONFIGS}"
    configs = planner.all_configs(dict(manifest.space), dict(manifest.config))
    try:
        out = launch_grid.run(LaunchGridInput(task_path=meta.path, configs=configs))
    except ToolFailure as e:
        return {}, f"launch grids not recorded: {e.message}"
    got = planner.programs_from(configs, out.results, manifest.primary)
    return got, "" if got else f"launch grids not recorded: {out.results[0].error}"


# ---------------------------------------------------------------------------------------------- search


def search_loop(
    propose: Callable[[list[tuple[dict[str, Any], float | None]]], list[dict[str, Any]]],
    evaluate: Callable[[list[dict[str, Any]]], list[tuple[float | None, str]]],
    deadline: float,
    clock: Callable[[], float] = time.monotonic,
    max_rounds: int = MAX_ROUNDS,
    start: dict[str, Any] | None = None,
) -> list[Evaluation]:
    """Rounds of propose -> evaluate until the search converges (no proposal), the deadline passes, or
    max_rounds; the first round runs even past the deadline. History scores are 1 / median_ms (higher is
    better, the planner's convention); the start config is in the history unscored so it is never
    re-proposed."""
    t0 = clock()
    history: list[tuple[dict[str, Any], float | None]] = [(dict(start), None)] if start is not None else []
    trace: list[Evaluation] = []
    for rnd in range(max_rounds):
        if rnd > 0 and clock() >= deadline:  # round 0 (the diagnosis-seeded proposals) always runs
            break
        configs = propose(history)
        if not configs:
            break
        for cfg, (ms, err) in zip(configs, evaluate(configs)):
            trace.append(Evaluation(config=dict(cfg), median_ms=ms, error=err, round=rnd, t_s=clock() - t0))
            history.append((dict(cfg), 1.0 / ms if ms else None))
    return trace


def _autotune(path: str, configs: list[dict[str, Any]], gpu: int, max_configs: int = 64) -> Any:
    from services.toolrunner.tools.autotune import spec as autotune
    from shared.tools.bench import AutotuneInput

    return autotune.run(
        AutotuneInput(
            task_path=path,
            configs=configs,
            max_configs=max_configs,
            gpu=gpu,
            warmup_ms=SEARCH_WARMUP_MS,
            rep_ms=SEARCH_REP_MS,
        )
    )


def pick_correct(
    trace: Sequence[Evaluation],
    start: dict[str, Any],
    check: Callable[[dict[str, Any]], Any],
    fallbacks: int = CORRECTNESS_FALLBACKS,
) -> tuple[Evaluation | None, Any, int, list[tuple[Evaluation, Any]]]:
    """The fastest timed configs in turn until one passes `check` (correctness on every shape); H200 run 5:
    attention d64's fastest configs ran out of shared memory on an edge shape and the row shipped nothing.
    Returns (chosen, its check result, checks run, [(rejected, its result)]); with none passing, the
    fastest is returned with its failing result."""
    ranked = sorted((e for e in trace if e.median_ms is not None), key=lambda e: e.median_ms or 0.0)
    chosen, result, failed = None, None, []
    for e in ranked[: 1 + fallbacks]:
        r = check({k: v for k, v in {**start, **e.config}.items() if start.get(k) != v})
        if r.passed:
            return e, r, len(failed) + 1, failed
        failed.append((e, r))
        if chosen is None:
            chosen, result = e, r
    return chosen, result, len(failed), failed


# ---------------------------------------------------------------------------------------------- figures


def roofline_bound_ms(level: str, flops: float, bytes_moved: float, roof: dict[str, Any]) -> float | None:
    """max(bytes / copy bandwidth, flops / bf16 tensor peak), both measured; L1 tasks run no tensor-core
    math, so only their bytes bound them (their FLOPs are a few per byte, far under any compute roof)."""
    bw, peak = roof.get("copy_bytes_per_s"), roof.get("bf16_flops_per_s")
    if not bw:
        return None
    t = bytes_moved / bw
    if level != "L1":
        if not peak:
            return None
        t = max(t, flops / peak)
    return t * 1e3


def meets(meta: TaskMeta, fraction: float | None, speedup_vs: dict[str, float | None]) -> bool | None:
    value = fraction if meta.target.against == "roofline" else speedup_vs.get(meta.target.against)
    return None if value is None else bool(value >= meta.target.at_least)


def _versions() -> dict[str, str]:
    import torch
    import triton

    return {
        "triton": str(triton.__version__),
        "torch": str(torch.__version__),
        "cuda": str(torch.version.cuda) if torch.version.cuda else NO_GPU,
    }


# ---------------------------------------------------------------------------------------------- one task


def settle(row: Row, best: Timing, speedup: float, ci: list[float], *, changed: bool, correct: bool) -> None:
    """What the row ships, by the verifier's acceptance rule: the best searched config when it is correct
    and its speedup interval clears 1 + min_gain, else the start config (after = before, speedup 1)."""
    row.candidate_speedup, row.candidate_ci = speedup, ci
    if not changed:
        row.outcome = (
            "start kept: no config was searched (the task's budget share was spent first)"
            if not row.evaluations
            else "start kept: no searched config beat it"
        )
    elif correct and ci[0] > 1.0 + MIN_GAIN:
        row.outcome = "patched: the best config's speedup interval clears 1 + min_gain"
    else:
        why = (
            "it failed correctness"
            if not correct
            else (f"its speedup {speedup:.2f}x [{ci[0]:.2f}, {ci[1]:.2f}] does not clear {1 + MIN_GAIN:g}x")
        )
        row.outcome = f"start kept: the best searched config was rejected ({why})"
    patched = row.outcome.startswith("patched")
    # "after" is what the system ships: the patch, or the start config when nothing was accepted.
    row.after = best if patched else row.before
    row.speedup, row.speedup_ci = (speedup, ci) if patched else (1.0, None)


def run_task(
    meta: TaskMeta,
    *,
    dry_run: bool,
    deadline: float,
    gpu: int,
    gpus: int,
    baselines: dict[str, Any],
    roof: dict[str, Any],
) -> Row:
    from services.toolrunner.tasks import load_task_cached

    t_start = time.monotonic()
    manifest = load_task_cached(meta.path)  # the tools below load it again: one sandboxed import
    planner = _planner()
    # The static layers are CPU work (~5 s: the compile tool and the pruning count); on a GPU run they
    # overlap the search, whose time goes to GPU timing in other processes, and join the row at the end.
    static = _STATIC_POOL.submit(static_layers, manifest, meta, planner)
    funnel, notes = static.result() if dry_run else ({}, [])
    row = _new_row(
        meta,
        gpus,
        device=NO_GPU,
        driver=NO_GPU,
        start_config=dict(manifest.config),
        funnel=funnel,
        notes=notes,
    )
    label = (
        "planner rules search (services.planner.search.next_configs) timed by autotune"
        if planner is not None
        else f"autotune over SPACE (fallback: no planner), first {FALLBACK_MAX_CONFIGS} configs"
    )
    if dry_run:
        row.search = f"not run (dry run); would run: {label}"
        row.not_measured = NO_GPU
        row.correctness = "not checked: dry run (CPU correctness: tests/benchmarks/test_suite_tasks.py)"
        row.wall_s = time.monotonic() - t_start
        return row
    row.search = label
    gpu_s = 0.0

    def evaluate(configs: list[dict[str, Any]]) -> list[tuple[float | None, str]]:
        nonlocal gpu_s
        t = time.monotonic()
        try:
            out = _autotune(meta.path, configs, gpu)
        finally:
            gpu_s += time.monotonic() - t
        return [(r.median_ms, r.error) for r in out.results]

    t_search = time.monotonic()
    if planner is not None:
        programs, why = launch_programs(manifest, meta, planner)
        if why:
            row.notes.append(why)
        p = problem(manifest, meta, planner, programs)
        trace = search_loop(
            lambda h: planner.next_configs(p, h), evaluate, deadline - TAIL_S, start=dict(manifest.config)
        )
    else:
        t = time.monotonic()
        out = _autotune(meta.path, [], gpu, max_configs=FALLBACK_MAX_CONFIGS)
        gpu_s += time.monotonic() - t
        trace = [
            Evaluation(config=r.config, median_ms=r.median_ms, error=r.error, t_s=time.monotonic() - t_search)
            for r in out.results
        ]
    row.evaluations = trace
    funnel["proposed"] = len(trace)
    funnel["timed_ok"] = sum(e.median_ms is not None for e in trace)
    from services.toolrunner.tools.bench_ab import spec as bench_ab
    from services.toolrunner.tools.run_correctness import spec as correctness
    from shared.tools.bench import BenchABInput, BenchSubject
    from shared.tools.run import RunCorrectnessInput

    def check(cfg: dict[str, Any]) -> Any:
        nonlocal gpu_s
        t = time.monotonic()
        try:
            return correctness.run(
                RunCorrectnessInput(
                    task_path=meta.path, config=cfg, shapes=["micro", "edge"], seeds=[0], device="cuda"
                )
            )
        finally:
            gpu_s += time.monotonic() - t

    best, corr, tried, failed = pick_correct(trace, manifest.config, check)
    row.notes += [
        f"config {e.config} ({e.median_ms:.4f} ms) failed correctness: {c.summary}" for e, c in failed
    ]
    if best is None:
        row.notes.append("no searched config ran; the start config is kept")
        best_cfg = dict(manifest.config)
        corr = check({})
        tried += 1
    else:
        best_cfg = {**manifest.config, **best.config}
        row.wall_s_to_best = best.t_s
    row.best_config = best_cfg
    overrides = {k: v for k, v in best_cfg.items() if manifest.config.get(k) != v}
    row.correct, row.correctness = corr.passed, corr.summary
    funnel["correctness_runs"] = tried
    funnel["correct"] = int(corr.passed)
    t = time.monotonic()
    ab = bench_ab.run(
        BenchABInput(
            a=BenchSubject(task_path=meta.path, label="start"),
            b=BenchSubject(task_path=meta.path, config=overrides, label="best"),
            gpu=gpu,
        )
    )
    gpu_s += time.monotonic() - t
    funnel["ab"] = 1
    row.before = Timing(
        median_ms=ab.a.stats.median_ms, p20_ms=ab.a.stats.p20_ms, p80_ms=ab.a.stats.p80_ms, n=ab.a.stats.n
    )
    best_timing = Timing(
        median_ms=ab.b.stats.median_ms, p20_ms=ab.b.stats.p20_ms, p80_ms=ab.b.stats.p80_ms, n=ab.b.stats.n
    )
    settle(
        row, best_timing, ab.speedup, [ab.ci_low, ab.ci_high], changed=bool(overrides), correct=corr.passed
    )
    prov = ab.provenance
    row.device, row.driver, row.cuda, row.triton, row.torch = (
        prov.device,
        prov.driver,
        prov.cuda,
        prov.triton,
        prov.torch,
    )
    full = next(c for c in manifest.costs if c.shape_name == "full")
    row.roofline_bound_ms = roofline_bound_ms(meta.level, full.flops, full.bytes_moved, roof)
    row.roofline = dict(roof)
    after_ms = row.after.median_ms
    if row.roofline_bound_ms is not None:
        row.roofline_fraction = row.roofline_bound_ms / after_ms
    base = baselines.get(meta.name, {})
    row.baselines_ms = {name: base.get(name) for name in meta.baselines}
    row.speedup_vs = {name: (ms / after_ms if ms else None) for name, ms in row.baselines_ms.items()}
    missing = [n for n, ms in row.baselines_ms.items() if ms is None]
    if missing:
        row.notes.append(f"baselines not measured: {', '.join(missing)}")
    if row.roofline_bound_ms is None:
        row.notes.append("roofline not measured (no baselines.json roofline for this session)")
    # Judged on what ships: a rejected best config leaves the (correct) start config in place.
    row.meets_target = meets(meta, row.roofline_fraction, row.speedup_vs)
    if not corr.passed:
        row.notes.append("the best searched config failed correctness")
    row.gpu_s = gpu_s
    static_funnel, static_notes = static.result()
    row.funnel, row.notes = {**static_funnel, **row.funnel}, static_notes + row.notes
    row.wall_s = time.monotonic() - t_start
    return row


# ---------------------------------------------------------------------------------------------- output


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def _span(values: list[float], spec: str) -> str:
    """`lo-hi` of sorted values as formatted, the one value when they format alike, "-" for none."""
    if not values:
        return "-"
    lo, hi = format(values[0], spec), format(values[-1], spec)
    return lo if lo == hi else f"{lo}-{hi}"


def markdown(report: Report) -> str:
    lines = ["# Kernel benchmark suite", ""]
    if report.dry_run:
        lines += [f"Dry run: static layers only; timings {NO_GPU}.", ""]
    roofs = [report.roofline] if report.roofline else []
    roofs += [r.roofline for r in report.rows if r.roofline]
    copy_tb = sorted({v / 1e12 for r in roofs if (v := r.get("copy_bytes_per_s"))})
    peak_tf = sorted({v / 1e12 for r in roofs if (v := r.get("bf16_flops_per_s"))})
    if roofs:
        runs = "runs" if len(roofs) > 1 else "run"
        said = (
            f"Roofline measured in the {runs} of these rows (each row's fraction is against its own run's): "
            f"copy {_span(copy_tb, '.2f')} TB/s, bf16 matmul {_span(peak_tf, '.0f')} TFLOP/s."
        )
        lines += [said, ""]
    header = (
        "| task | level | before ms | after ms | speedup [95 % CI] | roofline | vs eager | vs compile | "
        "vs sdpa/matmul | target | meets | correct | evals | to best s | GPU s | search |"
    )
    lines += [header, "|" + "---|" * 16]
    for row in report.rows:
        lib = row.speedup_vs.get("sdpa", row.speedup_vs.get("matmul"))
        ci = f" [{row.speedup_ci[0]:.2f}, {row.speedup_ci[1]:.2f}]" if row.speedup_ci else ""
        lines.append(
            f"| {row.task} | {row.level} | {_fmt(row.before.median_ms if row.before else None)} | "
            f"{_fmt(row.after.median_ms if row.after else None)} | {_fmt(row.speedup, '.2f')}{ci} | "
            f"{_fmt(row.roofline_fraction, '.2f')} | {_fmt(row.speedup_vs.get('eager'), '.2f')} | "
            f"{_fmt(row.speedup_vs.get('compile'), '.2f')} | {_fmt(lib, '.2f')} | {row.target} | "
            f"{'-' if row.meets_target is None else ('yes' if row.meets_target else 'no')} | "
            f"{'-' if row.correct is None else ('yes' if row.correct else 'no')} | "
            f"{'-' if report.dry_run else len(row.evaluations)} | "
            f"{_fmt(row.wall_s_to_best, '.1f')} | {_fmt(row.gpu_s, '.1f')} | "
            f"{'dry run' if report.dry_run else row.search.split(' (')[0]} |"
        )
    if rows_with := [r for r in report.rows if r.not_measured or r.notes or r.outcome]:
        lines += ["", "Notes:"]
        for r in rows_with:
            said = ([r.not_measured] if r.not_measured else []) + ([r.outcome] if r.outcome else [])
            lines.append(f"- {r.task}: " + "; ".join(said + r.notes))
    first = report.rows[0] if report.rows else None
    if first is not None:
        where = (
            f"device {first.device}; driver {first.driver}; CUDA {first.cuda}; Triton {first.triton}; "
            f"torch {first.torch}; GPUs {first.gpus}"
        )
        lines += ["", where]
    return "\n".join(lines) + "\n"


def _load_baselines(path: Path | None) -> tuple[dict[str, Any], dict[str, Any]]:
    if path is None or not path.is_file():
        return {}, {}
    data = msgspec.json.decode(path.read_bytes())
    per_task = {
        t["task"]: {k: v.get("median_ms") for k, v in t.get("baselines", {}).items()}
        for t in data.get("tasks", [])
    }
    return per_task, data.get("roofline", {})


def _new_row(meta: Any, gpus: int, **fields: Any) -> Row:
    """A task's row with its identity and versions filled in; `fields` sets the rest."""
    v = _versions()
    base: dict[str, Any] = {
        "device": "",
        "driver": "",
        "search": "",
        "start_config": {},
        "meets_target": None,
    }
    return Row(
        task=meta.name,
        level=meta.level,
        kind=meta.kind,
        cuda=v["cuda"],
        triton=v["triton"],
        torch=v["torch"],
        gpus=gpus,
        target=meta.target.describe(),
        **(base | fields),
    )


def _unmeasured(meta: Any, gpus: int, search: str, why: str, *, dry_run: bool) -> Row:
    """The row of a task that produced no measurement, saying why."""
    return _new_row(meta, gpus, device=NO_GPU if dry_run else "", search=search, not_measured=why)


def _earlier(path: Path) -> Report | None:
    """With --append: the earlier report. `write` replaces a row only once this run has measured its task
    again, so a run cut short keeps the earlier rows of the tasks it did not reach (H200 run 8 lost six)."""
    if not path.is_file():
        return None
    old = msgspec.json.decode(path.read_bytes(), type=Report)
    old.rows = [resettle(r) for r in old.rows]
    return old


def resettle(row: Row) -> Row:
    """A row measured before `settle` existed (H200 run 4) gets its rule applied to its recorded numbers:
    its old `after` is the best searched config's bench_ab timing, `speedup` and `speedup_ci` its ratio."""
    if row.outcome or row.before is None or row.after is None or row.speedup is None or not row.speedup_ci:
        return row
    changed = row.best_config is not None and row.best_config != row.start_config
    settle(row, row.after, row.speedup, row.speedup_ci, changed=changed, correct=bool(row.correct))
    after_ms = row.after.median_ms
    if row.roofline_bound_ms is not None:
        row.roofline_fraction = row.roofline_bound_ms / after_ms
    row.speedup_vs = {name: (ms / after_ms if ms else None) for name, ms in row.baselines_ms.items()}
    row.meets_target = meets(select(row.task)[0], row.roofline_fraction, row.speedup_vs)
    row.notes.append("outcome settled after the run from its recorded bench_ab numbers (rule added later)")
    return row


def write(report: Report, out_json: Path, out_md: Path, earlier: Report | None = None) -> None:
    """The JSON and the table; with an earlier report its kept rows join, in level and task order."""
    if earlier is not None and earlier.rows:
        done = {r.task for r in report.rows}
        kept = [r for r in earlier.rows if r.task not in done]
        rows = sorted([*kept, *report.rows], key=lambda r: (r.level, r.task))
        commands = [*earlier.earlier_commands, earlier.command]
        report = msgspec.structs.replace(report, rows=rows, earlier_commands=commands)
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n")
    out_md.write_text(markdown(report))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", help="comma-separated task names (file stems); default: every task")
    ap.add_argument("--budget-s", type=float, default=None, help="wall-clock budget for the whole run")
    ap.add_argument("--dry-run", action="store_true", help="CPU: static layers only, no timing")
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument(
        "--baselines",
        type=Path,
        default=RESULTS / "baselines.json",
        help="baselines.py's JSON (roofline + library times); measured first unless --no-baselines",
    )
    ap.add_argument("--no-baselines", action="store_true", help="use --baselines as it is, measure nothing")
    ap.add_argument(
        "--skip-compile",
        action="store_true",
        help="baselines without torch.compile(max-autotune) (minutes per GEMM task)",
    )
    ap.add_argument(
        "--append",
        action="store_true",
        help="keep --out-json's rows of tasks not run now (a suite measured in several GPU sessions)",
    )
    ap.add_argument("--out-json", type=Path, default=RESULTS / "kernels.json")
    ap.add_argument("--out-md", type=Path, default=RESULTS / "kernels.md")
    args = ap.parse_args(argv)
    try:
        metas = select(args.tasks)
    except SuiteError as e:
        ap.error(str(e))
    t0 = time.monotonic()
    end = t0 + args.budget_s if args.budget_s else math.inf
    from services.toolrunner.tools.run_correctness.spec import gpu_count

    gpus = gpu_count()
    if not args.dry_run and gpus == 0:
        ap.error("no GPU: pass --dry-run for the static layers on CPU")
    if not args.dry_run and not args.no_baselines:
        from benchmarks import baselines as bl

        share = (
            None if math.isinf(end) else 0.3 * (end - time.monotonic())
        )  # baselines get 30 % of the budget
        bl.main(
            ["--tasks", ",".join(m.name for m in metas), "--out", str(args.baselines), "--gpu", str(args.gpu)]
            + (["--budget-s", f"{share:.0f}"] if share else [])
            + (["--skip-compile"] if args.skip_compile else [])
        )
    per_task, roof = _load_baselines(None if args.dry_run else args.baselines)
    rows: list[Row] = []
    earlier = _earlier(args.out_json) if args.append else None

    def report() -> Report:
        return Report(
            dry_run=args.dry_run,
            budget_s=args.budget_s,
            roofline=roof,
            rows=rows,
            command=" ".join(["benchmarks/run_suite.py", *(argv if argv is not None else sys.argv[1:])]),
        )

    for i, meta in enumerate(metas):
        if time.monotonic() >= end:  # round 0 always runs once a task starts: so start none past the budget
            left_out = [m.name for m in metas[i:]]
            print(
                f"--budget-s {args.budget_s:.0f} spent: not started: {', '.join(left_out)}", file=sys.stderr
            )
            why = f"not started: the run's --budget-s {args.budget_s:.0f} was spent before this task"
            rows.extend(_unmeasured(m, gpus, "not started", why, dry_run=args.dry_run) for m in metas[i:])
            if earlier is not None:  # an earlier measured row beats a "not started" one
                have = {r.task for r in earlier.rows if not r.not_measured}
                rows[:] = [r for r in rows if r.task not in have or not r.not_measured]
            break
        left = len(metas) - i
        deadline = time.monotonic() + (end - time.monotonic()) / left if not math.isinf(end) else math.inf
        print(f"[{i + 1}/{len(metas)}] {meta.name}", file=sys.stderr, flush=True)
        try:
            rows.append(
                run_task(
                    meta,
                    dry_run=args.dry_run,
                    deadline=deadline,
                    gpu=args.gpu,
                    gpus=gpus,
                    baselines=per_task,
                    roof=roof,
                )
            )
        except Exception as e:  # noqa: BLE001 - one task's failure is its row, the suite goes on
            why = f"task failed: {type(e).__name__}: {getattr(e, 'message', e)}"
            rows.append(_unmeasured(meta, gpus, "failed", why, dry_run=args.dry_run))
        write(report(), args.out_json, args.out_md, earlier)  # a run cut short keeps the finished rows
    write(report(), args.out_json, args.out_md, earlier)
    print(f"wrote {args.out_json} and {args.out_md} ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
