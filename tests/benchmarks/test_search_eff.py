"""evaluations_to_reach on a small hand-checkable table.

TEST INPUT, not a measurement: the table's times below are made up so the answer can be worked out by
hand; real tables come from benchmarks/exhaustive.py on the GPU.
"""

from __future__ import annotations

import pytest

from benchmarks.search_eff import config_key, evaluations_to_reach, optimum

# Test input (hand-made): optimum is B=512 at 1.00 ms. 98 % of it means config_ms <= 1.00 / 0.98 = 1.0204.
TABLE = {
    config_key({"B": 128, "w": 4}): 2.00,
    config_key({"B": 256, "w": 4}): 1.50,
    config_key({"B": 512, "w": 4}): 1.00,
    config_key({"B": 1024, "w": 4}): 1.02,  # within 98 % (1.00 / 1.02 = 0.980)
    config_key({"B": 2048, "w": 4}): None,  # failed to launch
}


def test_optimum_skips_failed_configs() -> None:
    assert optimum(TABLE) == (config_key({"B": 512, "w": 4}), 1.00)


def test_counts_evaluations_until_within_98_percent() -> None:
    trace = [
        {"B": 128, "w": 4},
        {"B": 2048, "w": 4},
        {"w": 4, "B": 256},
        {"B": 1024, "w": 4},
        {"B": 512, "w": 4},
    ]
    assert evaluations_to_reach(trace, TABLE) == 4  # 1.02 ms is 98.04 % of optimum: the 4th evaluation
    assert evaluations_to_reach(trace, TABLE, fraction=1.0) == 5  # only the optimum itself


def test_config_missing_from_table_counts_but_never_hits() -> None:
    trace = [{"B": 64, "w": 4}, {"B": 512, "w": 4}]
    assert evaluations_to_reach(trace, TABLE) == 2


def test_never_reached_is_none_and_bad_fraction_is_refused() -> None:
    assert evaluations_to_reach([{"B": 128, "w": 4}, {"B": 256, "w": 4}], TABLE) is None
    with pytest.raises(ValueError, match="fraction"):
        evaluations_to_reach([], TABLE, fraction=1.5)
