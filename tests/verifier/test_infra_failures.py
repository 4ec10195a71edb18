"""Infrastructure failures are not candidate failures (issue 17), over a real nats-server.

- A toolrunner that comes up late: the verifier waits for it, then verifies the queued candidate.
- A toolrunner lost mid-call: the verifier learns it within seconds (the call is watched), the candidate
  is deferred and verified once another runner answers, one verdict per layer, no infrastructure reason.
- The error texts say what is missing: no toolrunner at all is not "no GPU".
"""

from __future__ import annotations

import asyncio
import time

import msgspec
import pytest

from services.toolrunner.registry import local_executor
from services.verifier.service import setup
from shared.bus import SERVICE_ERROR_CODE_HEADER, SERVICE_ERROR_HEADER
from shared.messages import Candidate, ToolRequest, Verdict, decode, encode
from shared.service import ServiceRuntime
from shared.subjects import candidate_subject, tool_subject
from shared.toolclient import BusToolClient, ToolInfraError
from tests.verifier.test_service_bus import TASK, TIMEOUT_S, serve_specs

INFRA_WORDS = ("toolrunner", "no responder", "gave no reply", "unavailable: no runner", "gone")


async def _verdicts(make_bus, n: int) -> tuple[list[Verdict], asyncio.Event]:  # type: ignore[no-untyped-def]
    watcher = await make_bus("critic")
    got: list[Verdict] = []
    done = asyncio.Event()

    async def on_verdict(v: Verdict) -> None:
        got.append(v)
        if len(got) >= n:
            done.set()

    await watcher.consume("verdicts.>", f"test-critic-{time.monotonic_ns()}", on_verdict, Verdict)
    return got, done


def _no_infra_reason(verdicts: list[Verdict]) -> None:
    for v in verdicts:
        assert v.status != "fail", (v.layer, v.reasons)
        assert not any(w in r for r in v.reasons for w in INFRA_WORDS), v.reasons


async def test_no_toolrunner_is_an_infrastructure_failure_with_an_accurate_text(make_bus) -> None:  # type: ignore[no-untyped-def]
    bus = await make_bus("verifier")
    res = await BusToolClient(bus).call("load_task", {"path": TASK})
    assert res.error is not None and res.error.code == "unavailable"
    assert "no toolrunner is up" in res.error.message and "GPU" not in res.error.message
    try:
        await BusToolClient(bus, raise_infra=True).call("load_task", {"path": TASK})
    except ToolInfraError as e:
        assert e.tool == "load_task" and "no toolrunner is up" in str(e)
    else:
        raise AssertionError("no ToolInfraError")


async def test_a_tool_endpoint_that_answers_a_service_error_is_an_infrastructure_failure(make_bus) -> None:  # type: ignore[no-untyped-def]
    # The micro layer's error reply (a handler that crashed) is no candidate's fault: the planner and the
    # decomposer, which call tools through BusToolClient, get an `unavailable` result; the verifier retries.
    runner = await make_bus("toolrunner")

    async def crashed(msg) -> None:  # type: ignore[no-untyped-def]
        await runner.nc.publish(msg.reply, b"", headers={SERVICE_ERROR_HEADER: "handler crashed",
                                                         SERVICE_ERROR_CODE_HEADER: "500"})

    await runner.nc.subscribe(tool_subject("load_task"), queue="toolrunner", cb=crashed)
    bus = await make_bus("verifier")
    res = await BusToolClient(bus, timeout_s=30).call("load_task", {"path": TASK})
    assert res.error is not None and res.error.code == "unavailable"
    assert "handler crashed" in res.error.message and res.error.message.startswith("tools.load_task: ")
    with pytest.raises(ToolInfraError, match="handler crashed"):
        await BusToolClient(bus, timeout_s=30, raise_infra=True).call("load_task", {"path": TASK})


async def test_a_late_toolrunner_gets_the_queued_candidate_verified(make_bus) -> None:  # type: ignore[no-untyped-def]
    c = Candidate(source="planner", kernel="add_kernel", task_path=TASK, version=1, config={"BLOCK": 256},
                  job_id="job-late")
    await (await make_bus("planner")).publish(candidate_subject(c.kernel), c)
    got, done = await _verdicts(make_bus, 3)
    runtime = ServiceRuntime("verifier", await make_bus("verifier"))
    await runtime.start()
    await setup(runtime)
    deadline = time.monotonic() + 30
    while runtime.details.get("waiting_for") != "toolrunner":  # the verifier says what it waits for
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    assert "verifier" not in runtime.bus.consumers  # it takes no candidate while no toolrunner is up
    await serve_specs(await make_bus("toolrunner"))
    await asyncio.wait_for(done.wait(), TIMEOUT_S)
    assert [(v.layer, v.status) for v in got] == [("static", "pass"), ("micro", "pass"), ("full", "skipped")]
    _no_infra_reason(got)


async def test_a_runner_lost_mid_call_defers_the_candidate_and_it_is_verified_once(make_bus) -> None:  # type: ignore[no-untyped-def]
    # Runner A serves run_correctness by hanging (a long call); it is killed once it holds the call.
    bus_a = await make_bus("toolrunner")
    a = await serve_specs(bus_a)
    holding = asyncio.Event()

    async def hang(msg) -> None:  # type: ignore[no-untyped-def]
        holding.set()
        await asyncio.sleep(3600)

    await a.micro.stop()  # type: ignore[union-attr]
    a.micro = None
    await a.start()
    executor = local_executor(runner=a.instance)
    for name in ("load_task", "compile", "ptxas_info", "sass", "honesty_probe"):
        async def handler(msg, name=name) -> None:  # type: ignore[no-untyped-def]
            req = msgspec.structs.replace(decode(msg.data, ToolRequest), tool=name)
            await msg.respond(encode(await asyncio.to_thread(executor.execute, req)))
        await a.add_endpoint(name, tool_subject(name), handler, queue_group="toolrunner", concurrent=True)
    await a.add_endpoint("run_correctness", tool_subject("run_correctness"), hang, queue_group="toolrunner",
                         concurrent=True)
    verifier = ServiceRuntime("verifier", await make_bus("verifier"))
    await verifier.start()
    await setup(verifier)
    got, done = await _verdicts(make_bus, 3)
    c = Candidate(source="planner", kernel="add_kernel", task_path=TASK, version=1, config={"BLOCK": 128},
                  job_id="job-lost")
    await (await make_bus("planner")).publish(candidate_subject(c.kernel), c)
    await asyncio.wait_for(holding.wait(), TIMEOUT_S)
    await bus_a.nc.close()  # the kill: A's subscriptions vanish with its connection, no reply
    stats = verifier.bus.consumers["verifier"]
    deadline = time.monotonic() + 30
    while stats.deferred == 0:  # the lost call is noticed in seconds and the candidate deferred
        assert time.monotonic() < deadline, "the verifier did not notice the runner's death"
        await asyncio.sleep(0.2)
    await serve_specs(await make_bus("toolrunner"))  # runner B
    await asyncio.wait_for(done.wait(), TIMEOUT_S)
    await asyncio.sleep(0)
    assert [(v.layer, v.status) for v in got] == [("static", "pass"), ("micro", "pass"), ("full", "skipped")]
    _no_infra_reason(got)
    assert (stats.handled, stats.dead_lettered) == (1, 0)
