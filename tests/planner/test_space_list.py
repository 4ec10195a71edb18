"""A SPACE given as a list of configs in the planner: read_task's views, the patcher's check that a
config is one of the listed ones, and the search, which measures exactly the listed configs."""

from __future__ import annotations

from pathlib import Path

from services.planner.context import build_context, read_task
from services.planner.patcher import apply_changes
from services.planner.policies.rules import RulesPolicy, parent_of
from services.planner.search import Problem, config_key, next_configs, prune_reasons
from shared.messages import ChangeDescription

ROOT = Path(__file__).resolve().parents[2]
LISTED = ('SPACE = [\n    {"BLOCK": 128, "num_warps": 4},\n    {"BLOCK": 256, "num_warps": 8},\n'
          '    {"BLOCK": 1024, "num_warps": 8, "num_stages": 2},\n]\n')


def _source() -> str:
    src = (ROOT / "examples" / "vector_add.py").read_text()
    start = src.index("SPACE = {")
    end = src.index("}\n", start) + 2
    return src[:start] + LISTED + src[end:]


def test_read_task_keeps_the_entries_and_each_keys_values() -> None:
    view = read_task("vector_add.py", _source())
    assert view.space_configs[2] == {"BLOCK": 1024, "num_warps": 8, "num_stages": 2}
    assert view.space == {"BLOCK": [128, 256, 1024], "num_warps": [4, 8], "num_stages": [2]}


def test_the_patcher_takes_a_listed_config_and_refuses_a_mix() -> None:
    src = _source()
    ok = apply_changes(src, [ChangeDescription(change="set_constexpr", target="BLOCK", value=256),
                             ChangeDescription(change="set_num_warps", value=8)])
    assert isinstance(ok, tuple) and ok[1] == {"BLOCK": 256, "num_warps": 8, "num_stages": 1}
    mixed = apply_changes(src, [ChangeDescription(change="set_constexpr", target="BLOCK", value=256)])
    assert not isinstance(mixed, tuple)
    assert "is not one of SPACE's 3 listed configs" in mixed.summary()
    assert "change the knobs together" in mixed.summary()
    assert mixed.errors[0].nearest == '{"BLOCK": 256, "num_warps": 8, "num_stages": 1}'


def test_the_search_measures_the_listed_configs_and_nothing_else() -> None:
    points = [{"BLOCK": 128, "num_warps": 4, "num_stages": 1}, {"BLOCK": 256, "num_warps": 8, "num_stages": 1},
              {"BLOCK": 1024, "num_warps": 8, "num_stages": 2}]
    p = Problem(config=dict(points[0]), space={"BLOCK": [128, 256, 1024], "num_warps": [4, 8],
                                                "num_stages": [1, 2]},
                full_shape={"n": 1 << 26}, points=points)
    assert prune_reasons({"BLOCK": 256, "num_warps": 4, "num_stages": 1}, p) == ["not one of SPACE's listed configs"]
    history: list = [(dict(points[0]), 1.0)]
    seen = []
    while batch := next_configs(p, history):
        seen += batch
        history += [(c, 2.0) for c in batch]
    assert sorted(map(config_key, seen)) == sorted(map(config_key, points[1:]))


def test_the_rules_policy_proposes_only_listed_configs() -> None:
    ctx = build_context(read_task("vector_add.py", _source()), "add_kernel")
    parent = parent_of(ctx)
    assert not parent.derived and len(parent.points) == 3
    plan = RulesPolicy().plan(ctx)
    configs = []
    for cand in plan.candidates:
        got = apply_changes(ctx.task.source, cand.changes)
        assert isinstance(got, tuple), got.summary()  # every proposal passes the patcher's list check
        configs.append(got[1])
    assert configs and all(c in parent.points for c in configs)
