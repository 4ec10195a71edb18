"""GPU only: time every legal config of an L1/L2 task's SPACE once on the full shape; record the optimum.

The table is what search efficiency is measured against (benchmarks/search_eff.py: evaluations a search
needed to reach 98 % of this optimum, from run_suite.py's `evaluations` trace). Configs are SPACE x
CONFIG filtered by the task's `constraint` (expanded in a sandboxed worker, benchmarks/space_worker.py),
timed by the `autotune` tool in chunks, so an interrupted run keeps what it measured: the per-task file
says `complete: false` and a rerun resumes from it. `--dry-run` (CPU) only counts the configs.

    .venv/bin/python benchmarks/exhaustive.py --dry-run
    .venv/bin/python benchmarks/exhaustive.py --tasks l1_relu --budget-s 120

Writes benchmarks/results/exhaustive/<task>.json.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.search_eff import config_key, optimum
from benchmarks.space_worker import SpaceJob, SpaceResult
from benchmarks.suite import SuiteError, select

OUT_DIR = ROOT / "benchmarks" / "results" / "exhaustive"
LEVELS = ("L1", "L2")  # L3/L4 spaces (10^4 - 10^5 configs of multi-kernel launches) are not swept
# Per config: ~1-3 s of Triton compile + warm-up + reps. 5 / 20 ms budgets keep a 100-config L1 space near
# 3-5 GPU minutes; one sample set per config ("once"), as the brief for the table asks.
WARMUP_MS = 5.0
REP_MS = 20.0
CHUNK = 24  # configs per autotune call: one sandboxed process each, so progress is saved per chunk


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
    gpu_s: float = 0.0


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


def lookup(table: Table) -> dict[str, float | None]:
    """The table as search_eff.evaluations_to_reach wants it: config key -> median ms (None = failed)."""
    return {config_key(e.config): e.median_ms for e in table.entries}


def sweep(task: str, path: str, out: Path, gpu: int, end: float) -> Table:
    from services.toolrunner import autotune
    from shared.tools.bench import AutotuneInput

    space = legal_configs(path)
    table = Table(task=task, space_size=space.space_size, legal=len(space.configs), complete=False)
    if out.is_file():  # resume: keep what an earlier run measured
        old = msgspec.json.decode(out.read_bytes(), type=Table)
        if old.legal == table.legal:
            table = old
    done = {config_key(e.config) for e in table.entries}
    todo = [c for c in space.configs if config_key(c) not in done]
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
                timeout_s=600.0,
            )
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
        "--budget-s", type=float, default=None, help="stop starting chunks after this many seconds"
    )
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--out-dir", type=Path, default=OUT_DIR)
    ap.add_argument("--dry-run", action="store_true", help="CPU: count the legal configs, time nothing")
    args = ap.parse_args(argv)
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
    from services.toolrunner.correctness import gpu_count

    if gpu_count() == 0:
        ap.error("unavailable: no GPU (pass --dry-run to count the configs on CPU)")
    end = time.monotonic() + args.budget_s if args.budget_s else math.inf
    for m in metas:
        if time.monotonic() >= end:
            break
        t = sweep(m.name, m.path, args.out_dir / f"{m.name}.json", args.gpu, end)
        best = f"{t.optimum.median_ms:.4f} ms at {t.optimum.config}" if t.optimum else "none ran"
        print(
            f"{m.name}: {len(t.entries)}/{t.legal} timed, complete={t.complete}, optimum {best}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
