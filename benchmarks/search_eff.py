"""Search efficiency: how many evaluations a search needed to reach 98 % of the exhaustive optimum. Pure.

The exhaustive table (benchmarks/exhaustive.py) holds every legal config's median time; the search trace
is the planner's evaluation sequence (run_suite.py rows, `evaluations`). Each trace config is looked up in
the table, so search and optimum are judged on the same measurements (no run-to-run noise between them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Config = Mapping[str, Any]


def config_key(cfg: Config) -> str:
    """Order-independent key of a config (the planner's search uses the same sorted-items rule)."""
    return ",".join(f"{k}={cfg[k]!r}" for k in sorted(cfg))


def optimum(table: Mapping[str, float | None]) -> tuple[str, float]:
    """The fastest (key, median_ms) of the table; failed configs (None) never win."""
    ok = [(k, v) for k, v in table.items() if v is not None]
    if not ok:
        raise ValueError("the exhaustive table has no config that ran")
    return min(ok, key=lambda kv: kv[1])


def evaluations_to_reach(
    trace: Sequence[Config], table: Mapping[str, float | None], fraction: float = 0.98
) -> int | None:
    """1-based count of evaluations until the best config so far is within `fraction` of the optimum's
    performance (optimum_ms / config_ms >= fraction). A trace config missing from the table or failed there
    counts as an evaluation that found nothing. None when the trace never gets there."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction {fraction} must be in (0, 1]")
    _, best_ms = optimum(table)
    for i, cfg in enumerate(trace, start=1):
        ms = table.get(config_key(cfg))
        if ms is not None and best_ms / ms >= fraction:
            return i
    return None
