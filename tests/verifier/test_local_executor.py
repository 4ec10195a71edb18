"""`kpilot verify` and the in-process tests reach the tools through the toolrunner's own executor.

The client `kpilot verify` uses must answer as the toolrunner answers over the bus: the input schema
refused with the executor's violations, GPU tools unavailable on a runner with no GPU, cacheable tools
served from the executor's cache.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from services.kpilot.commands.verify import tool_client
from services.toolrunner.registry import local_executor
from shared.messages import ToolRequest, ToolResult
from shared.toolclient import InProcessToolClient

ROOT = Path(__file__).resolve().parents[2]
TASK = str(ROOT / "examples" / "vector_add.py")
LAUNCH = {"num_warps": 4, "registers_per_thread": 32, "grid": [1024]}


def test_kpilot_verify_tool_path_rejects_a_schema_invalid_argument_with_the_executor_error() -> None:
    res = asyncio.run(tool_client().call("launch_config", {**LAUNCH, "num_warps": "four"}))
    assert not res.ok and res.error is not None
    assert res.error.code == "invalid_request"
    # The executor's JSON-Schema check, not a msgspec conversion error: it names the field and the fix.
    assert res.error.message == ("launch_config: 1 problem(s) in the arguments; see `kpilot tool --list` "
                                 "for the input schema")
    assert res.error.violations == ["num_warps: 'four' is not of type 'integer'"]
    unknown = asyncio.run(tool_client().call("launch_config", {**LAUNCH, "colour": "red"}))
    assert unknown.error is not None and unknown.error.code == "invalid_request"
    assert any("colour" in v for v in unknown.error.violations), unknown.error.violations


def test_a_gpu_tool_on_an_executor_without_a_gpu_is_unavailable_before_it_runs() -> None:
    client = InProcessToolClient(local_executor(gpus=0), source="test")
    res = asyncio.run(client.call("bench", {"task_path": TASK}))
    assert not res.ok and res.error is not None
    assert (res.error.code, res.error.message) == ("unavailable", "unavailable: no GPU on runner in-process")
    assert res.runner == "in-process"


def test_a_cacheable_tool_is_answered_from_the_executor_cache_the_second_time() -> None:
    client = tool_client()

    async def twice() -> tuple:  # type: ignore[type-arg]
        return await client.call("launch_config", LAUNCH), await client.call("launch_config", LAUNCH)

    first, second = asyncio.run(twice())
    assert first.ok and second.ok, (first.error, second.error)
    assert (first.cached, second.cached) == (False, True)
    assert second.result == first.result


def test_a_path_argument_gets_the_executor_file_check(tmp_path: Path) -> None:
    folder = tmp_path / "task.py"
    folder.mkdir()
    res = asyncio.run(tool_client().call("compile", {"task_path": str(folder)}))
    assert not res.ok and res.error is not None and res.error.code == "refused"
    assert res.error.message == (f"compile: task_path: {folder} is a directory, not a regular file; pass the "
                                 "path of a task .py file")


def test_the_in_process_client_sends_the_job_and_causation_like_the_bus_client() -> None:
    executor, sent = local_executor(gpus=0), []

    class Recorder:
        def execute(self, req: ToolRequest) -> ToolResult:
            sent.append(req)
            return executor.execute(req)

    client = InProcessToolClient(Recorder(), source="verifier", job_id="job-1", causation_id="c-1")
    res = asyncio.run(client.call("launch_config", LAUNCH))
    asyncio.run(client.call("launch_config", LAUNCH, job_id="job-2", causation_id="c-2"))
    assert [(r.source, r.tool, r.job_id, r.causation_id) for r in sent] == [
        ("verifier", "launch_config", "job-1", "c-1"), ("verifier", "launch_config", "job-2", "c-2")]
    assert (res.ok, res.source, res.job_id, res.causation_id) == (True, "toolrunner", "job-1", sent[0].id)
