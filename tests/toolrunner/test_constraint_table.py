"""The task's constraint() over its SPACE (shared/constraint_table.py), as load_task carries it in the
manifest: every config judged as constraint() itself judges it on the micro and full shapes, a raise
refuses only its config, and above the cap or the time limit nothing is judged."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from services.toolrunner.tasks import load_task
from shared.constraint_table import ConstraintScope, evaluate, scope_of
from shared.tools.task import ConstraintTable

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = ROOT / "benchmarks" / "tasks" / "l3_pipeline.py"
FIXTURE = ROOT / "tests" / "fixtures" / "tasks" / "add_constrained.py"


def _module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"constraint_test_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def _shapes(m: ModuleType) -> list[tuple[str, dict[str, int]]]:
    return [("micro", m.SHAPES["micro"]), ("full", m.SHAPES["full"])]


def _direct(m: ModuleType, cfg: dict[str, Any]) -> bool:
    """True when the task's own constraint refuses `cfg` (as the loader refuses a candidate's CONFIG)."""
    try:
        return not all(m.constraint(dict(cfg), dict(s)) is True for _, s in _shapes(m))
    except Exception:  # noqa: BLE001
        return True


def _scope(m: ModuleType, table: ConstraintTable, space_configs: list | None = None) -> ConstraintScope:
    space = m.SPACE if isinstance(m.SPACE, dict) else {}
    return ConstraintScope(path="t.py", config=dict(m.CONFIG), space=dict(space),
                           space_configs=list(space_configs or []), table=table)


def test_l3_pipeline_table_judges_every_config_as_its_constraint_does() -> None:
    m = _module(PIPELINE)
    table = evaluate(m.constraint, m.CONFIG, m.SPACE, [], _shapes(m))
    assert table.status == "complete" and table.configs == 46080 and table.raised == 0
    assert table.keys == list(m.SPACE) and table.shapes == ["micro", "full"]
    scope = _scope(m, table)
    keys = list(m.SPACE)
    refused = 0
    for values in itertools.product(*(m.SPACE[k] for k in keys)):
        cfg = {**m.CONFIG, **dict(zip(keys, values, strict=True))}
        assert scope.refuses(cfg) is _direct(m, cfg), cfg
        refused += _direct(m, cfg)
    assert table.refused == refused and 0 < refused < table.configs
    # H200 run r42's l3_pipeline candidate v4, refused at the verifier's static layer: refused here.
    v4 = {"EMB_BLOCK": 64, "ATT_BLOCK_M": 16, "ATT_BLOCK_N": 32, "FFN_BLOCK_M": 32, "FFN_BLOCK_N": 32,
          "FFN_BLOCK_K": 32, "num_warps": 4, "num_stages": 1}
    assert scope.refuses(v4) is True and scope.refuses(dict(m.CONFIG)) is False


def test_a_raising_constraint_refuses_only_the_configs_it_raises_on() -> None:
    m = _module(FIXTURE)
    table = evaluate(m.constraint, m.CONFIG, m.SPACE, [], _shapes(m))
    scope = _scope(m, table)
    assert table.status == "complete" and table.configs == 30
    # the 16-warp configs whose block fits the micro row reach MAX_PER_THREAD[16]: KeyError
    assert table.raised == 3 and "raised KeyError: 16" in table.note
    for b, w in itertools.product(m.SPACE["BLOCK"], m.SPACE["num_warps"]):
        cfg = {"BLOCK": b, "num_warps": w, "num_stages": 1}
        assert scope.refuses(cfg) is _direct(m, cfg), cfg
        if w == 16:
            assert scope.refuses(cfg) is True
    assert table.refused == sum(_direct(m, {"BLOCK": b, "num_warps": w, "num_stages": 1})
                                for b in m.SPACE["BLOCK"] for w in m.SPACE["num_warps"])


def test_configs_the_table_does_not_cover_are_not_judged() -> None:
    m = _module(FIXTURE)
    scope = _scope(m, evaluate(m.constraint, m.CONFIG, m.SPACE, [], _shapes(m)))
    refused = {"BLOCK": 4096, "num_warps": 1, "num_stages": 1}
    assert scope.refuses(refused) is True
    assert scope.refuses(refused | {"SPLIT_K": 2}) is None  # a transformation's knob: not in the table
    assert scope.refuses({"BLOCK": 4096, "num_warps": 1}) is None  # a key missing
    assert scope.refuses({"BLOCK": 8192, "num_warps": 1, "num_stages": 1}) is None  # outside SPACE
    assert scope.refuses({"BLOCK": 256, "num_warps": 1, "num_stages": 2}) is None  # nor that num_stages
    assert scope.refuses({"BLOCK": 256.0, "num_warps": 1, "num_stages": 1}) is None  # 256.0 is not 256


def test_a_list_space_is_numbered_in_list_order() -> None:
    m = _module(FIXTURE)
    listed = [{"BLOCK": 256, "num_warps": 2}, {"BLOCK": 4096, "num_warps": 1}, {"BLOCK": 256, "num_warps": 2},
              {"BLOCK": 512, "num_warps": 16}, {"BLOCK": 128, "num_warps": 4}]
    space = {"BLOCK": [256, 4096, 512, 128], "num_warps": [2, 1, 16, 4]}  # the manifest's domains
    table = evaluate(m.constraint, m.CONFIG, space, listed, _shapes(m))
    assert table.configs == 4 and table.refused == 2 and table.raised == 1  # the duplicate counts once
    scope = ConstraintScope(path="t.py", config=dict(m.CONFIG), space=space, space_configs=listed, table=table)
    for e in listed:
        assert scope.refuses({**m.CONFIG, **e}) is _direct(m, {**m.CONFIG, **e}), e
    assert scope.refuses({"BLOCK": 512, "num_warps": 2, "num_stages": 1}) is None  # not listed


def test_over_the_cap_or_the_time_limit_nothing_is_judged() -> None:
    m = _module(PIPELINE)
    over = evaluate(m.constraint, m.CONFIG, m.SPACE, [], _shapes(m), cap=46079)
    assert over.status == "over_cap" and over.refused_bits == b"" and "46,080 configs" in over.note
    assert _scope(m, over).refuses(dict(m.CONFIG)) is None
    ticks = itertools.count(0.0, 1.0)  # a clock where every reading is a second later
    slow = evaluate(m.constraint, m.CONFIG, m.SPACE, [], _shapes(m), time_limit_s=10.0,
                    clock=lambda: next(ticks))
    assert slow.status == "timed_out" and slow.refused_bits == b"" and "over 10 s" in slow.note
    assert _scope(m, slow).refuses(dict(m.CONFIG)) is None


@pytest.fixture(scope="module")
def fixture_manifest() -> Any:
    return load_task(FIXTURE)  # the real sandboxed loader


def test_load_task_carries_the_table_in_the_manifest(fixture_manifest: Any) -> None:
    m = _module(FIXTURE)
    assert fixture_manifest.constraint_table == evaluate(m.constraint, m.CONFIG, m.SPACE, [], _shapes(m))
    assert any("raised KeyError" in n for n in fixture_manifest.notes)
    scope = scope_of(fixture_manifest)
    assert scope is not None and scope.refuses({"BLOCK": 2048, "num_warps": 8, "num_stages": 1}) is True
