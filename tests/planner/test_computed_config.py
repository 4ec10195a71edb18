"""A CONFIG computed by code: the planner (which never imports a task) takes its value from the
toolrunner's load_task, and the patcher appends a literal CONFIG that overrides it (the last assignment
wins); the candidate file loads with the new config (examples/README.md, "Computed CONFIG")."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

from services.planner import jobs
from services.planner.context import ComputedConfig, read_task
from services.planner.loop import Planner, kernel_of
from services.planner.patcher import CONFIG_OVERRIDE, TaskSource, apply_changes
from services.planner.policies.rules import RulesPolicy
from services.toolrunner.tasks import load_task
from shared.messages import ChangeDescription, ToolResult
from tests.planner.test_jobs_loop import MemoryIO

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "add_computed_config.py"


@pytest.fixture(scope="module")
def manifest() -> Any:
    return load_task(TASK)  # the real sandboxed import evaluates _heuristic(1000)


def test_read_task_asks_for_the_evaluated_config_and_uses_it(manifest: Any) -> None:
    source = TASK.read_text()
    with pytest.raises(ComputedConfig, match="CONFIG computed by code.*load_task"):
        read_task(str(TASK), source)
    view = read_task(str(TASK), source, evaluated=manifest)
    assert view.config == {"BLOCK": 1024, "num_warps": 4, "num_stages": 1}
    assert view.space["BLOCK"] == [128, 256, 512, 1024]  # SPACE is a literal: read from the source
    assert kernel_of(str(TASK)) == "add_kernel"  # naming a job needs no CONFIG


def test_a_config_change_appends_a_literal_that_overrides_the_computed_one(manifest: Any) -> None:
    source = TASK.read_text()
    changes = [ChangeDescription(change="set_constexpr", target="BLOCK", value=256)]
    refused = apply_changes(source, changes)  # without the evaluated value there is nothing to start from
    assert not isinstance(refused, tuple) and "load_task" in refused.summary()
    got = apply_changes(source, changes, config=dict(manifest.config))
    assert isinstance(got, tuple), got
    text, config = got
    assert config == {"BLOCK": 256, "num_warps": 4, "num_stages": 1}
    assert text.startswith(source) and text.endswith(
        f"{CONFIG_OVERRIDE}CONFIG = {{\"BLOCK\": 256, \"num_warps\": 4, \"num_stages\": 1}}\n")
    assert "CONFIG = _heuristic(1000)" in text  # the user's code stays as written
    # The next change rewrites the appended literal instead of appending another one.
    again = apply_changes(text, [ChangeDescription(change="set_num_warps", value=2)])
    assert isinstance(again, tuple) and again[0].count("CONFIG = {") == 1
    assert TaskSource(again[0]).literal("CONFIG") == {"BLOCK": 256, "num_warps": 2, "num_stages": 1}


def test_the_patched_file_loads_with_the_new_config(manifest: Any, tmp_path: Path) -> None:
    got = apply_changes(TASK.read_text(), [ChangeDescription(change="set_constexpr", target="BLOCK", value=256)],
                        config=dict(manifest.config))
    assert isinstance(got, tuple)
    out = tmp_path / "cand.py"
    out.write_text(got[0])
    assert load_task(out).config == {"BLOCK": 256, "num_warps": 4, "num_stages": 1}


class LoadTaskIO(MemoryIO):
    """MemoryIO whose load_task tool is the toolrunner's real one (a sandboxed import)."""

    def __init__(self, manifest: Any) -> None:
        super().__init__()
        self.manifest = manifest
        self.tools: list[str] = []

    async def call_tool(self, name: str, args: dict[str, Any]) -> ToolResult:
        self.tools.append(name)
        if name == "load_task":
            return ToolResult(source="test", tool=name, tool_version="1", ok=True,
                              result=msgspec.to_builtins(self.manifest))
        return await super().call_tool(name, args)


async def test_a_job_opens_on_a_computed_config_and_its_candidates_override_it(
    manifest: Any, tmp_path: Path
) -> None:
    task = tmp_path / "add_computed_config.py"
    shutil.copy(TASK, task)
    io = LoadTaskIO(manifest)
    planner = Planner(io, {"rules": RulesPolicy()}, tmp_path / "cands")
    s = await planner.trigger(kernel="add_kernel", task_path=str(task), trigger_id="req-1",
                              budget=jobs.Budget(wall_s=1e9, gpu_s=1e9, candidates=8))
    assert jobs.is_open(s), s.reasons
    assert io.tools.count("load_task") == 1  # once per file version, not once per round
    assert io.candidates
    for c in io.candidates:
        text = Path(c.candidate_path).read_text()
        assert TaskSource(text).literal("CONFIG") == c.config and CONFIG_OVERRIDE in text


async def test_a_job_on_a_computed_config_load_task_refused_says_so(tmp_path: Path) -> None:
    task = tmp_path / "add_computed_config.py"
    shutil.copy(TASK, task)
    io = MemoryIO()  # its load_task answers ok=False
    s = await Planner(io, {"rules": RulesPolicy()}, tmp_path / "cands").trigger(
        kernel="add_kernel", task_path=str(task), trigger_id="req-1")
    assert s.status == "failed" and "load_task could not evaluate it" in " ".join(s.reasons)
