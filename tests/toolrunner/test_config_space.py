"""Expanding a task's SPACE over CONFIG (the autotune tool's config list), on the example tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.toolrunner.task_runtime import import_task
from services.toolrunner.tools.autotune.config_space import expand, merge

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_vector_add_space_respects_its_constraint() -> None:
    m = import_task(EXAMPLES / "vector_add.py")
    configs = expand(m.CONFIG, m.SPACE, m.constraint, m.SHAPES["full"])
    full = 1
    for v in m.SPACE.values():
        full *= len(v)
    assert 0 < len(configs) < full  # the constraint removed some
    assert all(c["BLOCK"] >= 32 * c["num_warps"] for c in configs)
    assert {"BLOCK": 128, "num_warps": 4, "num_stages": 1} in configs
    assert {"BLOCK": 128, "num_warps": 8, "num_stages": 1} not in configs  # 128 < 256 threads
    assert set(configs[0]) == set(m.CONFIG)


def test_order_is_deterministic_product_order() -> None:
    cfgs = expand({"A": 0, "B": 0, "C": 9}, {"A": [1, 2], "B": [3, 4]})
    assert cfgs == [
        {"A": 1, "B": 3, "C": 9},
        {"A": 1, "B": 4, "C": 9},
        {"A": 2, "B": 3, "C": 9},
        {"A": 2, "B": 4, "C": 9},
    ]
    assert expand({"A": 1}, {}) == [{"A": 1}]


def test_merge_overrides_and_refuses_unknown_keys() -> None:
    m = import_task(EXAMPLES / "matmul.py")
    (cfg,) = merge(m.CONFIG, [{"BLOCK_M": 128}])
    assert cfg["BLOCK_M"] == 128 and cfg["BLOCK_N"] == m.CONFIG["BLOCK_N"]
    with pytest.raises(KeyError, match="BLOCK"):
        merge(m.CONFIG, [{"BLOCK": 64}])
