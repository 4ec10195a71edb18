"""Bad tool arguments get a structured refusal naming the fix, never an exception or a dead runner.

Issue 18: `load_task` on /dev/zero read it in-process until the OOM killer ended the runner; a long path
raised an uncaught OSError (no answer); any absolute .py on the host was accepted and executed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from services.toolrunner.catalog import load_specs
from services.toolrunner.registry import ToolExecutor
from services.toolrunner.service import setup
from services.toolrunner.task_paths import ROOTS_VAR, TaskRoots
from services.toolrunner.tasks import TaskError, load_task
from shared.bus import Bus
from shared.messages import ToolRequest, ToolResult
from shared.natsserver import EmbeddedServer
from shared.service import ServiceRuntime
from shared.toolclient import BusToolClient
from tests.conftest import BusFactory

ROOT = Path(__file__).resolve().parents[2]
VECTOR_ADD = str(ROOT / "examples" / "vector_add.py")
LONG = "/" + "a" * 250 + ("/" + "b" * 250) * 39  # 10,000+ characters, every component too long too


@pytest.fixture(scope="module")
def executor(tmp_path_factory: pytest.TempPathFactory) -> ToolExecutor:
    state = tmp_path_factory.mktemp("state")
    return ToolExecutor(load_specs(), gpus=0, runner="test", roots=TaskRoots.for_stack(state))


def _call(ex: ToolExecutor, tool: str, args: dict) -> ToolResult:
    start = time.monotonic()
    res = ex.execute(ToolRequest(source="test", tool=tool, args=args))
    assert time.monotonic() - start < 60
    return res


def _hostile(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "executed"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').write('ran on the host')\n")
    return evil, marker


def test_dev_zero_is_refused_before_anything_reads_it(executor: ToolExecutor) -> None:
    res = _call(executor, "load_task", {"path": "/dev/zero"})
    assert not res.ok and res.error is not None and res.error.code == "refused"
    assert "not a regular file" in res.error.message and "pass the path of a task .py file" in res.error.message


def test_a_fifo_is_refused_without_blocking(executor: ToolExecutor, tmp_path: Path) -> None:
    fifo = tmp_path / "task.py"
    os.mkfifo(fifo)
    for tool, field in (("load_task", "path"), ("compile", "task_path")):
        res = _call(executor, tool, {field: str(fifo)})
        assert not res.ok and res.error is not None and "not a regular file" in res.error.message


def test_a_10000_character_path_gets_an_answer(executor: ToolExecutor) -> None:
    assert len(LONG) > 10_000
    res = _call(executor, "load_task", {"path": LONG})
    assert not res.ok and res.error is not None and res.error.code == "refused"
    assert "the limit is 4096" in res.error.message
    with pytest.raises(TaskError, match="the limit is 4096"):  # in-process callers get the same check
        load_task(LONG)
    res = _call(executor, "load_task", {"path": str(ROOT / "examples" / ("x" * 300 + ".py"))})
    assert not res.ok and res.error is not None and "File name too long" in res.error.message


def test_a_py_outside_the_allowed_roots_is_refused_and_never_runs(executor: ToolExecutor,
                                                                   tmp_path: Path) -> None:
    evil, marker = _hostile(tmp_path)
    for tool, field in (("load_task", "path"), ("compile", "task_path"), ("run_correctness", "task_path")):
        res = _call(executor, tool, {field: str(evil)})
        assert not res.ok and res.error is not None and res.error.code == "refused", (tool, res.error)
        assert "outside the allowed task roots" in res.error.message and ROOTS_VAR in res.error.message
    res = _call(executor, "run_correctness", {"task_path": VECTOR_ADD, "candidate_path": str(evil)})
    assert not res.ok and res.error is not None and "candidate_path" in res.error.message
    assert not marker.exists()


def test_an_allowed_task_loads_and_an_added_root_runs_its_task_only_in_the_sandbox(tmp_path: Path) -> None:
    state = tmp_path / "state"
    evil, marker = _hostile(tmp_path)
    ex = ToolExecutor(load_specs(), gpus=0, runner="test", roots=TaskRoots.for_stack(state, [tmp_path]))
    ok = _call(ex, "load_task", {"path": VECTOR_ADD})
    assert ok.ok and ok.result is not None and ok.result["name"] == "vector_add", ok.error
    res = _call(ex, "load_task", {"path": str(evil)})
    assert not res.ok and res.error is not None and "importing the task raised" in res.error.message
    assert not marker.exists()  # imported in the sandbox, which cannot write the host's dir


def test_every_tool_answers_bad_arguments_with_a_structured_error(executor: ToolExecutor) -> None:
    bad = [{"path": "/dev/zero", "task_path": "/dev/zero"}, {"task_path": LONG}, {"task_path": "/etc/passwd"},
           {"task_path": VECTOR_ADD, "cubin_path": "/dev/urandom"}, {"task_path": 3}, {},
           {"task_path": VECTOR_ADD, "artifact_dir": "/etc"}]
    for tool in executor.specs:
        for args in bad:
            res = _call(executor, tool, args)
            assert not res.ok and res.error is not None, (tool, args)
            assert res.error.code in ("invalid_request", "refused", "unavailable"), (tool, args, res.error)


@pytest.fixture
async def runner(nats_server: EmbeddedServer, tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch) -> ServiceRuntime:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ROOTS_VAR)  # the default roots only, as `kpilot up` starts it
    bus = await Bus.connect(nats_server.url("toolrunner"), "toolrunner")
    runtime = ServiceRuntime("toolrunner", bus)
    await runtime.start()
    await setup(runtime)
    runtime.ready = True
    yield runtime  # type: ignore[misc]
    runtime.stop()
    if runtime.micro is not None:
        await runtime.micro.stop()
    await bus.close()


async def test_the_runner_over_nats_answers_every_bad_path_and_keeps_serving(
        runner: ServiceRuntime, make_bus: BusFactory, tmp_path: Path) -> None:
    client = BusToolClient(await make_bus("verifier"), timeout_s=60)
    evil, marker = _hostile(tmp_path)
    for path in ("/dev/zero", LONG, str(evil)):
        res = await client.call("load_task", {"path": path})
        assert not res.ok and res.error is not None and res.error.code == "refused", (path[:50], res.error)
    assert "sandbox" in runner.details and "root_drop" in runner.details["sandbox"] or \
        "userns" in runner.details["sandbox"]
    ok = await client.call("load_task", {"path": VECTOR_ADD})  # still alive, still serving
    assert ok.ok, ok.error
    assert not marker.exists()
