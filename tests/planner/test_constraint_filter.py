"""The planner never proposes a config the task's own constraint() refuses: load_task's table of it
(shared/constraint_table.py) prunes the rules search, and the loop leaves out any policy's candidate
whose config it refuses, saying so in the job log. Before, such configs reached the verifier's static
layer, one wasted candidate each (H200 run r42: one of the six l3_pipeline candidates).

TEST INPUT: tests/fixtures/tasks/add_constrained.py, a vector add whose constraint refuses blocks
above its micro row and raises for 16 warps; its manifest comes from the real sandboxed loader."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from services.planner import jobs
from services.planner.context import Attempt, PlannerContext, defines_constraint, read_task
from services.planner.loop import Planner
from services.planner.patcher import PatchRejected, apply_changes
from services.planner.policies.base import CandidatePlan, Plan
from services.planner.policies.rules import RulesPolicy
from services.toolrunner.tasks import load_task
from shared.constraint_table import scope_of
from shared.messages import ChangeDescription
from tests.planner.test_computed_config import LoadTaskIO
from tests.planner.test_jobs_loop import MemoryIO

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tests" / "fixtures" / "tasks" / "add_constrained.py"
BUDGET = jobs.Budget(wall_s=1e9, gpu_s=1e9, candidates=30)


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("constraint_filter_task", TASK)
    assert spec is not None and spec.loader is not None
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


TASK_MODULE = _module()


def _refused(cfg: dict[str, Any]) -> bool:
    """The task's own verdict, as the loader gives it on a candidate's CONFIG (micro and full shapes)."""
    m = TASK_MODULE
    try:
        return not all(m.constraint(dict(cfg), dict(m.SHAPES[s])) is True for s in ("micro", "full"))
    except Exception:  # noqa: BLE001
        return True


@pytest.fixture(scope="module")
def manifest() -> Any:
    return load_task(TASK)


def _ctx(manifest: Any, attempts: list[Attempt], with_table: bool = True) -> PlannerContext:
    scope = scope_of(manifest)
    assert scope is not None
    return PlannerContext(kernel="add_kernel", kernel_class="elementwise",
                          task=read_task(str(TASK), TASK.read_text()), has_dot=False, attempts=attempts,
                          constraints=[scope] if with_table else [])


def _configs(plan: Plan) -> list[dict]:
    out = []
    for c in plan.candidates:
        got = apply_changes(TASK.read_text(), c.changes)
        assert not isinstance(got, PatchRejected), got.summary()
        out.append(dict(got[1]))
    return out


def test_the_rules_search_skips_configs_the_constraint_refuses(manifest: Any) -> None:
    policy = RulesPolicy()
    # the fixture is one where it matters: without the table the first round holds refused configs
    assert any(_refused(c) for c in _configs(policy.plan(_ctx(manifest, [], with_table=False))))
    ctx = _ctx(manifest, [])
    first = _configs(policy.plan(ctx))
    assert first and not any(_refused(c) for c in first), first
    assert len(ctx.constraints[0].seen) == 18  # every refused config of the SPACE was passed over
    # after a round of failures the next seeds come from the allowed configs too
    failed = [Attempt(candidate_id=f"c{n}", version=n, config=c, status="fail", layer="static")
              for n, c in enumerate(first, 1)]
    again = _configs(policy.plan(_ctx(manifest, failed)))
    assert not any(_refused(c) for c in again), again


async def test_a_job_proposes_no_refused_config_and_says_how_many_it_skipped(
    manifest: Any, tmp_path: Path
) -> None:
    task = tmp_path / TASK.name
    shutil.copy(TASK, task)
    io = LoadTaskIO(manifest)
    planner = Planner(io, {"rules": RulesPolicy()}, tmp_path / "cands")
    s = await planner.trigger(kernel="add_kernel", task_path=str(task), trigger_id="req-1", budget=BUDGET)
    assert jobs.is_open(s), s.reasons
    assert io.candidates and not any(_refused(c.config) for c in io.candidates), [c.config for c in io.candidates]
    line = [n for n in s.notes if n.startswith("constraint:")]
    assert line == [("constraint: the search skipped 18 configs the task's constraint refuses, 0 proposed "
                     "candidate(s) left out for it; tables: 18 of 30 SPACE configs refused (3 because "
                     "constraint raised or returned a non-bool) on shapes micro, full")]
    assert io.tools.count("load_task") == 1


class FixedPolicy:
    """A policy (as an llm answer could be) proposing one refused and one allowed config."""

    name = "fixed"

    async def propose(self, ctx: PlannerContext) -> Plan:
        def cand(block: int, warps: int) -> CandidatePlan:
            return CandidatePlan(changes=[ChangeDescription(change="set_constexpr", target="BLOCK", value=block),
                                          ChangeDescription(change="set_num_warps", value=warps)])
        return Plan(analysis="two configs", candidates=[cand(4096, 4), cand(512, 4)])


async def test_the_loop_leaves_out_any_policys_refused_config(manifest: Any, tmp_path: Path) -> None:
    task = tmp_path / TASK.name
    shutil.copy(TASK, task)
    io = LoadTaskIO(manifest)
    planner = Planner(io, {"rules": RulesPolicy(), "fixed": FixedPolicy()}, tmp_path / "cands")  # type: ignore[dict-item]
    s = await planner.trigger(kernel="add_kernel", task_path=str(task), trigger_id="req-1", budget=BUDGET,
                              policy="fixed")
    assert [c.config for c in io.candidates] == [{"BLOCK": 512, "num_warps": 4, "num_stages": 1}]
    assert any(n.startswith("rejected plan candidate 0: config {'BLOCK': 4096")
               and "refused by the task's constraint" in n for n in s.notes), s.notes
    assert any(n.startswith("constraint: the search skipped 0 configs") and "1 proposed candidate(s) left out"
               in n for n in s.notes), s.notes


async def test_without_a_table_the_job_goes_on_and_says_the_constraint_was_not_checked(tmp_path: Path) -> None:
    task = tmp_path / TASK.name
    shutil.copy(TASK, task)
    io = MemoryIO()  # its load_task answers nothing
    planner = Planner(io, {"rules": RulesPolicy()}, tmp_path / "cands")
    s = await planner.trigger(kernel="add_kernel", task_path=str(task), trigger_id="req-1", budget=BUDGET)
    assert jobs.is_open(s) and io.candidates, s.reasons
    assert [n for n in s.notes if "not checked by the planner" in n] == [
        f"constraint of {task} not checked by the planner: load_task no answer"]


def test_which_files_define_a_constraint() -> None:
    assert defines_constraint(TASK.read_text())
    assert defines_constraint("from limits import constraint\n")
    assert defines_constraint("constraint = lambda config, shape: True\n")
    assert not defines_constraint((ROOT / "tests/fixtures/tasks/add_computed_config.py").read_text())
    assert not defines_constraint("def constraint(:\n")
