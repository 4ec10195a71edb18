"""GPU only: time every legal config of an L1/L2 task's SPACE once on the full shape; record the optimum.

The table is what search efficiency is measured against (benchmarks/search_eff.py: evaluations a search
needed to reach 98 % of this optimum, from run_suite.py's `evaluations` trace). Configs are SPACE x
CONFIG filtered by the task's `constraint` (expanded in a sandboxed worker, benchmarks/space_worker.py).

Per task, two phases:
1. Precompile (Triton tasks): the configs not measured yet are dealt into `--precompile-procs` slices,
   each launched once per config by a sandboxed worker (benchmarks/precompile_worker.py); the workers
   run side by side, so Triton's JIT compiles use that many CPU cores at once. Nothing is timed here.
   A CUDA C++ task is not precompiled: it compiles through NVRTC into a dict of its own process, which
   no later process can read.
2. Timing: the `autotune` tool in chunks of CHUNK configs, one sandboxed process per chunk. Every worker
   of the sweep shares one Triton cache (`--triton-cache`, given to each worker as TRITON_CACHE_DIR
   through its sandbox Limits), so a chunk loads the kernels phase 1 compiled instead of compiling
   them between timings.
   A config that failed to precompile is timed (and its error recorded) by its chunk as before.
Progress is saved after every chunk, so an interrupted run keeps what it measured: the per-task file says
`complete: false` and a rerun resumes from it. `--dry-run` (CPU) only counts the configs.

On the H200 (runs 16-22) the nine L1 tables took 5.9 min of precompile and timing, the four Hopper-sized
L2 tables 9.2 min (benchmarks/results/exhaustive/README.md).

    .venv/bin/python benchmarks/exhaustive.py --dry-run
    .venv/bin/python benchmarks/exhaustive.py --tasks l1_relu --budget-s 120

Writes benchmarks/results/exhaustive/<task>.json (the cache goes to <out-dir>/.triton-cache by default).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.precompile_worker import PrecompileJob, PrecompileResult
from benchmarks.search_eff import config_key, optimum
from benchmarks.space_worker import SpaceJob, SpaceResult
from benchmarks.suite import SuiteError, select

OUT_DIR = ROOT / "benchmarks" / "results" / "exhaustive"
LEVELS = ("L1", "L2")  # L3/L4 spaces (10^4 - 10^5 configs of multi-kernel launches) are not swept
# do_bench's warm-up and repetition time budgets per config (its defaults are 25 / 100 ms): one sample set
# per config ("once"), as the brief for the table asks.
WARMUP_MS = 5.0
REP_MS = 20.0
# Configs per autotune call. Each call is one sandboxed process that imports torch and builds the
# full-shape inputs once, and progress is saved after each call. Precompiled configs leave a chunk cache
# loads, not compiles, between its timings; 96 configs is one whole L1 space such as l1_vector_add's.
CHUNK = 96
AUTOTUNE_TIMEOUT_S = 600.0  # AutotuneInput's default; the tool sets no maximum of its own
# One precompile slice: ceil(configs / procs) first launches. A slice that runs out of time loses only
# its remaining compiles (the cache keeps every kernel written before) and its chunk compiles those.
PRECOMPILE_TIMEOUT_S = 600.0
PRECOMPILE_WORKER = "benchmarks.precompile_worker"


class Entry(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    config: dict[str, Any]
    median_ms: float | None
    p20_ms: float | None = None
    p80_ms: float | None = None
    error: str = ""


class Table(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task: str
    shape: str = "full"
    space_size: int
    legal: int  # configs the constraint accepts
    complete: bool
    entries: list[Entry] = []
    optimum: Entry | None = None
    method: str = ""
    device: str = ""
    driver: str = ""
    cuda: str = ""
    triton: str = ""
    torch: str = ""
    warmup_ms: float = WARMUP_MS
    rep_ms: float = REP_MS
    gpu_s: float = 0.0  # wall seconds of the autotune calls (the timing chunks), summed over runs
    precompile_s: float = 0.0  # wall seconds of the parallel precompile phases, summed over runs


class Precompiled(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What one task's precompile phase did: every slice's result, joined."""

    wall_s: float = 0.0
    procs: int = 0  # slices run side by side (0: precompile off or nothing to compile)
    configs: int = 0
    compiled: int = 0
    errors: dict[str, str] = {}  # config key -> error of its first launch
    failures: list[str] = []  # slices whose worker returned no result ("timeout: timed out after ...")


def legal_configs(task_path: str, shape: str = "full") -> SpaceResult:
    from services.toolrunner.sandbox import Limits, run_worker

    out = run_worker(
        "benchmarks.space_worker",
        msgspec.json.encode(SpaceJob(task_path=task_path, shape=shape)),
        Limits(timeout_s=120.0),
    )
    if out.status != "ok" or out.result is None:
        raise RuntimeError(f"expanding {task_path}'s SPACE {out.status}: {out.message}")
    return msgspec.json.decode(out.result, type=SpaceResult)


# Variant switches taken out of the suite's tasks by issue 20 (the planner reaches those code paths by
# transformations now), each with the value that is the task's kernel as it stands. A table recorded while
# a task still had the switch keeps its rows at that value, with the knob dropped (lookup(knobs=...)).
# Variant switches issue 20 took out of the suite's tasks, with the value that was the straightforward
# kernel: a table recorded with one is read at that value only (the other rows timed the variant).
REMOVED_SWITCHES: dict[str, int] = {"USE_TILE": 0, "PAD_ALIGN": 0, "SPLIT_M": 1, "CHUNK_MAX": 0}


def lookup(table: Table, knobs: set[str] | None = None) -> dict[str, float | None]:
    """The table as search_eff.evaluations_to_reach wants it: config key -> median ms (None = failed).
    With `knobs` (the task's CONFIG keys now), rows are read as that task's configs: a knob the task no
    longer has must be a REMOVED_SWITCHES entry, and only its rows at the removed value are kept."""
    out: dict[str, float | None] = {}
    for e in table.entries:
        cfg = dict(e.config)
        if knobs is not None:
            gone = {k: v for k, v in cfg.items() if k not in knobs}
            unknown = sorted(k for k in gone if k not in REMOVED_SWITCHES)
            if unknown:
                raise ValueError(f"{table.task}'s exhaustive table has knobs {unknown} the task no longer has and "
                                 "that are not removed switches: re-record the table (benchmarks/exhaustive.py)")
            if any(v != REMOVED_SWITCHES[k] for k, v in gone.items()):
                continue
            cfg = {k: v for k, v in cfg.items() if k in knobs}
        out[config_key(cfg)] = e.median_ms
    return out


def default_precompile_procs() -> int:
    """One compiling process per core, less two for this process and the system (14 on 16 cores)."""
    return max(0, min(14, (os.cpu_count() or 1) - 2))


Env = tuple[tuple[str, str], ...]


def cache_env(path: Path) -> Env:
    """The worker variables that make every worker of a sweep share the Triton cache at `path` (made
    absolute, since workers run in their own scratch dirs). Passed to each worker through its Limits, not
    through this process's environment: the sandbox gives other workers their own cache as before."""
    path = path.resolve()
    path.mkdir(parents=True, exist_ok=True)
    return (("TRITON_CACHE_DIR", str(path)),)


def precompile_jobs(path: str, configs: list[dict[str, Any]], procs: int) -> list[PrecompileJob]:
    """`configs` dealt round-robin into min(procs, len(configs)) non-empty jobs; procs <= 0: none.

    Round-robin, not contiguous runs: neighbours in SPACE order differ in the last (fastest-varying)
    parameter only, so each slice gets a like share of the big and the small kernels.
    """
    n = min(procs, len(configs))
    if n <= 0:
        return []
    return [PrecompileJob(task_path=path, configs=configs[i::n]) for i in range(n)]


def _precompile_one(job: PrecompileJob, gpu: int, timeout_s: float, env: Env) -> PrecompileResult | str:
    from services.toolrunner.sandbox import Limits, run_worker

    limits = Limits(timeout_s=timeout_s, memory_mb=None, gpu=gpu, env=env)
    out = run_worker(PRECOMPILE_WORKER, msgspec.json.encode(job), limits)
    if out.status != "ok" or out.result is None:
        return f"{out.status}: {out.message}"
    return msgspec.json.decode(out.result, type=PrecompileResult)


def precompile(
    path: str, configs: list[dict[str, Any]], procs: int, gpu: int, timeout_s: float, env: Env = ()
) -> Precompiled:
    """Launch every config once, `procs` sandboxed workers side by side, to fill the shared Triton cache.

    Never raises for a config or a worker that fails: the timing chunk compiles and records those.
    """
    jobs = precompile_jobs(path, configs, procs)
    if not jobs:
        return Precompiled()
    t = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        results = list(pool.map(lambda job: _precompile_one(job, gpu, timeout_s, env), jobs))
    done = Precompiled(wall_s=time.monotonic() - t, procs=len(jobs), configs=len(configs))
    for r in results:
        if isinstance(r, str):
            done.failures.append(r)
        else:
            done.compiled += r.compiled
            done.errors.update(r.errors)
    return done


def _report_precompile(task: str, pre: Precompiled) -> None:
    print(
        f"{task}: precompiled {pre.compiled}/{pre.configs} configs in {pre.wall_s:.1f} s with {pre.procs} "
        f"processes ({len(pre.errors)} config errors, {len(pre.failures)} slices without a result)",
        file=sys.stderr,
        flush=True,
    )
    for f in pre.failures[:3]:  # three say why; the line above gives the count of all
        print(f"  precompile slice {f}", file=sys.stderr)


def sweep(
    task: str, path: str, out: Path, gpu: int, end: float, precompile_procs: int = 0, env: Env = ()
) -> Table:
    """Time `task`'s legal configs not yet in `out` (precompiled first unless precompile_procs is 0)."""
    from services.toolrunner.tools.autotune import spec as autotune
    from shared.tools.bench import AutotuneInput

    space = legal_configs(path)
    table = Table(task=task, space_size=space.space_size, legal=len(space.configs), complete=False)
    if out.is_file():  # resume: keep what an earlier run measured
        old = msgspec.json.decode(out.read_bytes(), type=Table)
        if old.legal == table.legal:
            table = old
    done = {config_key(e.config) for e in table.entries}
    todo = [c for c in space.configs if config_key(c) not in done]
    if todo and precompile_procs > 0 and time.monotonic() < end:
        pre = precompile(
            path,
            todo,
            precompile_procs,
            gpu,
            min(PRECOMPILE_TIMEOUT_S, max(30.0, end - time.monotonic())),
            env,
        )
        table.precompile_s += pre.wall_s
        _report_precompile(task, pre)
    for i in range(0, len(todo), CHUNK):
        if time.monotonic() >= end:
            break
        chunk = todo[i : i + CHUNK]
        t = time.monotonic()
        res = autotune.run(
            AutotuneInput(
                task_path=path,
                configs=chunk,
                max_configs=len(chunk),
                gpu=gpu,
                warmup_ms=WARMUP_MS,
                rep_ms=REP_MS,
                timeout_s=AUTOTUNE_TIMEOUT_S,
            ),
            env=env,
        )
        table.gpu_s += time.monotonic() - t
        table.entries += [
            Entry(config=r.config, median_ms=r.median_ms, p20_ms=r.p20_ms, p80_ms=r.p80_ms, error=r.error)
            for r in res.results
        ]
        p = res.provenance
        table.method, table.device, table.driver, table.cuda, table.triton, table.torch = (
            res.method,
            p.device,
            p.driver,
            p.cuda,
            p.triton,
            p.torch,
        )
        table.complete = len(table.entries) >= table.legal
        _save(table, out)
    table.complete = len(table.entries) >= table.legal
    return table


def _save(table: Table, out: Path) -> None:
    if any(e.median_ms is not None for e in table.entries):
        key, _ = optimum(lookup(table))
        table.optimum = next(e for e in table.entries if config_key(e.config) == key)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(msgspec.json.format(msgspec.json.encode(table), indent=2) + b"\n")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", help="comma-separated L1/L2 task names; default: every L1 and L2 task")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="stop starting precompile phases and chunks after this many seconds",
    )
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--out-dir", type=Path, default=OUT_DIR)
    ap.add_argument(
        "--precompile-procs",
        type=int,
        default=default_precompile_procs(),
        help="precompile workers run side by side before a task's timing chunks; 0 turns precompiling "
        "off (default: CPU cores - 2, at most 14: %(default)s here)",
    )
    ap.add_argument(
        "--triton-cache",
        type=Path,
        default=None,
        help="the Triton cache every worker of the sweep shares (default: <out-dir>/.triton-cache)",
    )
    ap.add_argument("--dry-run", action="store_true", help="CPU: count the legal configs, time nothing")
    args = ap.parse_args(argv)
    if args.precompile_procs < 0:
        ap.error(f"--precompile-procs {args.precompile_procs}: want 0 (off) or more")
    try:
        metas = select(args.tasks)
    except SuiteError as e:
        ap.error(str(e))
    if args.tasks and (bad := [m.name for m in metas if m.level not in LEVELS]):
        ap.error(f"{bad}: exhaustive tables are for L1/L2 tasks only (their SPACEs are sweepable)")
    metas = [m for m in metas if m.level in LEVELS]
    if args.dry_run:
        total = 0
        for m in metas:
            s = legal_configs(m.path)
            total += len(s.configs)
            print(f"{m.name}: {len(s.configs)} legal of {s.space_size}")
        print(f"total: {total} configs")
        return 0
    from services.toolrunner.tools.run_correctness.spec import gpu_count

    if gpu_count() == 0:
        ap.error("unavailable: no GPU (pass --dry-run to count the configs on CPU)")
    end = time.monotonic() + args.budget_s if args.budget_s else math.inf
    env = cache_env(args.triton_cache or args.out_dir / ".triton-cache")
    for m in metas:
        if time.monotonic() >= end:
            break
        procs = args.precompile_procs if m.kind == "triton" else 0  # NVRTC has no on-disk cache
        t = sweep(m.name, m.path, args.out_dir / f"{m.name}.json", args.gpu, end, procs, env)
        best = f"{t.optimum.median_ms:.4f} ms at {t.optimum.config}" if t.optimum else "none ran"
        print(
            f"{m.name}: {len(t.entries)}/{t.legal} timed, complete={t.complete}, optimum {best}, "
            f"precompile {t.precompile_s:.1f} s, timing {t.gpu_s:.1f} s",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
