"""Search replay (`make bench-search-replay`, no GPU): the planner's search run to convergence against the
measured exhaustive tables, each config's time looked up instead of timed.

The suite's rows (run_suite.py) show what the search found in the rounds its GPU share allowed, often
round 0 only. This replays the same loop (`run_suite.search_loop` with `services.planner.search.
next_configs`, the task's real program counts from the `launch_grid` tool) with the H200 tables of
benchmarks/exhaustive.py as the oracle, round after round until the search converges or `--max-rounds`,
and reports the evaluations it needed to reach 98 % of the optimum. A proposal the table does not hold
(a config the task's `constraint` refuses; the planner does not read constraints) counts as a failed
evaluation, as a launch failure would in a live search.

What it is not: a measurement of a live search. Every time comes from the one sample set per config the
table holds, so run-to-run noise that would steer a live search differently is absent.

    .venv/bin/python benchmarks/search_replay.py --exhaustive-dir benchmarks/results/exhaustive \
        --out benchmarks/results/h200/suite/search_replay
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.exhaustive import Table, lookup
from benchmarks.run_suite import launch_programs, problem, search_loop
from benchmarks.search_eff import config_key, evaluations_to_reach, optimum
from benchmarks.suite import SuiteError, select

FRACTION = 0.98  # "98 % of the exhaustive optimum"
TARGET_SHARE = 0.20  # "... within 20 % of its evaluations"
MAX_ROUNDS = 16  # twice the suite's: the replay costs no GPU, so it shows where the search converges


class Replay(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task: str
    legal: int
    rounds: int  # rounds the search ran before it converged or hit --max-rounds
    converged: bool  # the search proposed nothing more (False: stopped by --max-rounds)
    evaluations: int
    outside_table: int  # proposals the table does not hold (refused by the task's constraint)
    optimum_ms: float
    best_ms: float | None  # the best config the search found, from the table
    evaluations_to_98: int | None  # None: never reached 98 % of the optimum
    share_of_space: float | None
    meets_target: bool
    trace: list[dict[str, Any]]  # the proposals in order, each the start config with the overrides
    programs_note: str = ""  # why launch grids were not recorded (the search then used its shape model)


def replay(task: str, table: Table, max_rounds: int = MAX_ROUNDS) -> Replay:
    from services.planner import search as planner
    from services.toolrunner.tasks import load_task_cached

    meta = select(task)[0]
    manifest = load_task_cached(meta.path)
    start = dict(manifest.config)
    times = lookup(table, set(start))  # rows of a removed switch's other value are another kernel now
    legal = table.legal if len(times) == len(table.entries) else len(times)
    programs, why = launch_programs(manifest, meta, planner)
    p = problem(manifest, meta, planner, programs)

    def evaluate(configs: list[dict[str, Any]]) -> list[tuple[float | None, str]]:
        out: list[tuple[float | None, str]] = []
        for c in configs:
            key = config_key({**start, **c})
            if key not in times:
                out.append((None, "not in the exhaustive table: the task's constraint refuses it"))
            else:
                ms = times[key]
                out.append((ms, "" if ms is not None else "failed in the exhaustive sweep"))
        return out

    evals = search_loop(
        lambda h: planner.next_configs(p, h), evaluate, math.inf, max_rounds=max_rounds, start=start
    )
    rounds = max((e.round for e in evals), default=-1) + 1
    trace = [{**start, **e.config} for e in evals]
    found = [e.median_ms for e in evals if e.median_ms is not None]
    _, best = optimum(times)
    to_98 = evaluations_to_reach(trace, times, FRACTION)
    share = to_98 / legal if to_98 is not None and legal else None
    return Replay(
        task=task,
        legal=legal,
        rounds=rounds,
        converged=rounds < max_rounds,
        evaluations=len(evals),
        outside_table=sum(1 for e in evals if e.error.startswith("not in the exhaustive table")),
        optimum_ms=best,
        best_ms=min(found) if found else None,
        evaluations_to_98=to_98,
        share_of_space=share,
        meets_target=share is not None and share <= TARGET_SHARE,
        trace=trace,
        programs_note=why,
    )


def markdown(rows: Sequence[Replay], max_rounds: int) -> str:
    def f(x: float | None, spec: str = ".4f") -> str:
        return "-" if x is None else format(x, spec)

    lines = [
        "# Search replay against the exhaustive tables (no GPU): evaluations to 98 % of the optimum",
        "",
        f"The planner's search run until it converges (at most {max_rounds} rounds), each config's time looked",
        "up in its task's H200 exhaustive table. A replay, not a live search (see benchmarks/search_replay.py).",
        "",
        (
            "| task | legal configs | rounds | converged | evals | outside table | optimum ms | best ms | "
            "evals to 98 % | share of space | <= 20 % |"
        ),
        "|" + "---|" * 11,
    ]
    for r in rows:
        lines.append(
            f"| {r.task} | {r.legal} | {r.rounds} | {'yes' if r.converged else 'no'} | {r.evaluations} | "
            f"{r.outside_table} | {f(r.optimum_ms)} | {f(r.best_ms)} | "
            f"{r.evaluations_to_98 if r.evaluations_to_98 is not None else 'not reached'} | "
            f"{f(r.share_of_space, '.1%')} | {'yes' if r.meets_target else 'no'} |"
        )
    if notes := [r for r in rows if r.programs_note]:
        lines += ["", "Notes:"] + [f"- {r.task}: {r.programs_note}" for r in notes]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exhaustive-dir", type=Path, required=True, help="exhaustive.py's --out-dir")
    ap.add_argument("--tasks", help="comma-separated task names; default: every task with a table")
    ap.add_argument("--max-rounds", type=int, default=MAX_ROUNDS)
    ap.add_argument("--out", type=Path, required=True, help="output stem: writes STEM.json and STEM.md")
    args = ap.parse_args(argv)
    if args.max_rounds < 1:
        ap.error(f"--max-rounds {args.max_rounds}: give at least 1 (round 0 is the seeds)")
    paths = sorted(args.exhaustive_dir.glob("*.json"))
    if args.tasks:
        try:
            wanted = [m.name for m in select(args.tasks)]
        except SuiteError as e:
            ap.error(str(e))
        paths = [p for p in paths if p.stem in wanted]
        if missing := sorted(set(wanted) - {p.stem for p in paths}):
            ap.error(f"no exhaustive table in {args.exhaustive_dir} for {missing}: run exhaustive.py first")
    if not paths:
        ap.error(f"no exhaustive tables in {args.exhaustive_dir}: run benchmarks/exhaustive.py on a GPU first")
    rows = []
    for path in paths:
        table = msgspec.json.decode(path.read_bytes(), type=Table)
        if not table.complete:
            print(f"{path.stem}: skipped, its table is incomplete ({len(table.entries)}/{table.legal})",
                  file=sys.stderr)
            continue
        rows.append(replay(path.stem, table, args.max_rounds))
        r = rows[-1]
        print(f"{r.task}: {r.evaluations} evals in {r.rounds} rounds, to 98 %: {r.evaluations_to_98}",
              file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_bytes(msgspec.json.format(msgspec.json.encode(rows), indent=2) + b"\n")
    args.out.with_suffix(".md").write_text(markdown(rows, args.max_rounds))
    print(f"wrote {args.out}.json and .md ({len(rows)} tasks)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
