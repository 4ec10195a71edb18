"""Search efficiency report: the suite's search traces (run_suite.py's kernels.json) against the exhaustive
tables (exhaustive.py's results/exhaustive/<task>.json). No GPU: it only reads what those two measured.

Per L1/L2 task with both: evaluations the planner's search needed to reach 98 % of the exhaustive optimum,
that count as a fraction of the legal space (the issue's target: within 20 % of its evaluations), and
whether the table is complete. A trace config is the task's start config with the search's overrides, so
it is keyed like the table's SPACE x CONFIG entries. Tasks without a table say why.

    make bench-search-eff   # = .venv/bin/python benchmarks/search_report.py \
        --suite benchmarks/results/h200/suite/kernels.json --exhaustive-dir benchmarks/results/exhaustive \
        --out benchmarks/results/h200/suite/search_eff
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.exhaustive import Table, lookup
from benchmarks.run_suite import Report
from benchmarks.search_eff import config_key, evaluations_to_reach, optimum

FRACTION = 0.98  # "98 % of the exhaustive optimum"
TARGET_SHARE = 0.20  # "... within 20 % of its evaluations"


class Efficiency(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task: str
    level: str
    legal: int | None = None
    table_complete: bool | None = None
    optimum_ms: float | None = None
    search_best_ms: float | None = None  # the best traced config, looked up in the table
    evaluations: int = 0  # the search's trace length
    evaluations_to_98: int | None = None  # None: the search never reached 98 % of the optimum
    share_of_space: float | None = None  # evaluations_to_98 / legal
    meets_target: bool | None = None
    not_measured: str = ""


def efficiency(row: Any, table: Table | None) -> Efficiency:
    eff = Efficiency(task=row.task, level=row.level, evaluations=len(row.evaluations))
    if table is None:
        eff.not_measured = "no exhaustive table for this task (exhaustive.py did not sweep it)"
        return eff
    try:  # a run recorded after a switch left its task reads the table's rows at the removed value
        times = lookup(table, set(row.start_config))
    except ValueError as e:
        eff.not_measured = str(e)
        return eff
    legal = table.legal if len(times) == len(table.entries) else len(times)
    eff.legal, eff.table_complete = legal, table.complete
    try:
        _, eff.optimum_ms = optimum(times)
    except ValueError as e:
        eff.not_measured = str(e)
        return eff
    trace = [{**row.start_config, **e.config} for e in row.evaluations]
    found = [t for c in trace if (t := times.get(config_key(c))) is not None]
    eff.search_best_ms = min(found) if found else None
    eff.evaluations_to_98 = evaluations_to_reach(trace, times, FRACTION)
    if eff.evaluations_to_98 is not None and legal:
        eff.share_of_space = eff.evaluations_to_98 / legal
    eff.meets_target = eff.share_of_space is not None and eff.share_of_space <= TARGET_SHARE
    return eff


def markdown(rows: Sequence[Efficiency]) -> str:
    lines = [
        "# Search efficiency (L1-L2): evaluations to 98 % of the exhaustive optimum",
        "",
        (
            "| task | legal configs | table complete | optimum ms | search best ms | evals | evals to 98 % | "
            "share of space | <= 20 % |"
        ),
        "|" + "---|" * 9,
    ]
    def f(x: float | None, spec: str = ".4f") -> str:
        return "-" if x is None else format(x, spec)

    def to_98(r: Efficiency) -> str:  # "not reached" is a search result; without a table there is none
        if r.evaluations_to_98 is not None:
            return str(r.evaluations_to_98)
        return "not measured" if r.not_measured else "not reached"

    for r in rows:
        lines.append(
            f"| {r.task} | {r.legal if r.legal is not None else '-'} | "
            f"{'-' if r.table_complete is None else ('yes' if r.table_complete else 'no')} | "
            f"{f(r.optimum_ms)} | {f(r.search_best_ms)} | {r.evaluations} | "
            f"{to_98(r)} | "
            f"{f(r.share_of_space, '.1%')} | "
            f"{'-' if r.meets_target is None else ('yes' if r.meets_target else 'no')} |"
        )
    if missing := [r for r in rows if r.not_measured]:
        lines += ["", "Not measured:"] + [f"- {r.task}: {r.not_measured}" for r in missing]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", type=Path, required=True, help="run_suite.py's kernels.json")
    ap.add_argument("--exhaustive-dir", type=Path, required=True, help="exhaustive.py's --out-dir")
    ap.add_argument("--out", type=Path, required=True, help="output stem: writes STEM.json and STEM.md")
    args = ap.parse_args(argv)
    if not args.suite.is_file():
        ap.error(f"no suite report at {args.suite}: run benchmarks/run_suite.py on a GPU first")
    report = msgspec.json.decode(args.suite.read_bytes(), type=Report)
    rows = []
    for row in report.rows:
        if row.level not in ("L1", "L2") or not row.evaluations:
            continue
        path = args.exhaustive_dir / f"{row.task}.json"
        table = msgspec.json.decode(path.read_bytes(), type=Table) if path.is_file() else None
        rows.append(efficiency(row, table))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = msgspec.json.format(msgspec.json.encode(rows), indent=2) + b"\n"
    args.out.with_suffix(".json").write_bytes(text)
    args.out.with_suffix(".md").write_text(markdown(rows))
    print(f"wrote {args.out}.json and .md ({len(rows)} tasks)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
