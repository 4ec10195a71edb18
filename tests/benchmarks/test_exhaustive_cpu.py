"""exhaustive.py's CPU parts: the legal-config expansion (sandboxed, real task) and the saved optimum.

Entries in test_optimum_is_saved_and_resumable are TEST INPUT (made-up times), not measurements.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from benchmarks import exhaustive
from benchmarks.search_eff import config_key, evaluations_to_reach
from benchmarks.suite import TASKS_DIR


def test_vector_add_space_under_its_constraint_has_96_configs() -> None:
    # SPACE: BLOCK 7 values x num_warps 5 x num_stages 3 = 105. Constraint BLOCK >= 32 * num_warps drops
    # BLOCK 128 with 8 or 16 warps and BLOCK 256 with 16 warps: 3 pairs x 3 stages = 9, so 96 remain.
    res = exhaustive.legal_configs(str(TASKS_DIR / "l1_vector_add.py"))
    assert res.space_size == 105
    assert len(res.configs) == 96
    assert all(c["BLOCK"] >= 32 * c["num_warps"] for c in res.configs)


def test_l3_and_l4_tasks_are_refused() -> None:
    with pytest.raises(SystemExit):
        exhaustive.main(["--tasks", "l3_pipeline", "--dry-run"])


def test_optimum_is_saved_and_looked_up(tmp_path: Path) -> None:
    entries = [
        exhaustive.Entry(config={"BLOCK": 128}, median_ms=2.0),
        exhaustive.Entry(config={"BLOCK": 256}, median_ms=None, error="OutOfResources: test input"),
        exhaustive.Entry(config={"BLOCK": 512}, median_ms=0.5),
    ]
    table = exhaustive.Table(task="t", space_size=3, legal=3, complete=True, entries=entries)
    out = tmp_path / "t.json"
    exhaustive._save(table, out)
    back = msgspec.json.decode(out.read_bytes(), type=exhaustive.Table)
    assert back.optimum is not None and back.optimum.config == {"BLOCK": 512}
    lut = exhaustive.lookup(back)
    assert lut[config_key({"BLOCK": 256})] is None
    assert evaluations_to_reach([{"BLOCK": 128}, {"BLOCK": 512}], lut) == 2
