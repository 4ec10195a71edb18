"""No poison messages, against a real nats-server: whatever a message is or does to its handler, it is
dead-lettered with the reason (or deferred, when a dependency is down) and the consumer goes on; a dead
consumer loop makes health unhealthy and ends the service; a watched request fails fast when its
responder dies, and is asked again when its responder's connection dropped and came back mid-call."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from shared.bus import Bus, ResponderLost, ServiceFailed, Unavailable
from shared.limits import LimitExceeded, check, depth_exceeds
from shared.messages import DeadLetter, Heartbeat, Message, ToolRequest, ToolResult, encode
from shared.natsserver import EmbeddedServer
from shared.service import EXIT_PART_DIED, ServiceRuntime, instances
from tests.conftest import BusFactory

DEEP = b'{"kind":"heartbeat","source":"x","seq":' + b"[" * 3000 + b"]" * 3000 + b"}"


async def _letters(op: Bus, n: int, timeout_s: float = 10.0) -> list[DeadLetter]:
    got: list[DeadLetter] = []
    done = asyncio.Event()

    async def on(dl: Message) -> None:
        got.append(dl)  # type: ignore[arg-type]
        if len(got) >= n:
            done.set()

    await op.consume("dlq.>", f"test-dlq-{time.monotonic_ns()}", on, DeadLetter)
    try:
        await asyncio.wait_for(done.wait(), timeout_s)
    except TimeoutError:
        pass
    return got


def test_depth_check_needs_no_recursion() -> None:
    assert depth_exceeds(DEEP) and depth_exceeds(b"[" * 5000)  # closed or truncated
    assert not depth_exceeds(json.dumps({"a": "[" * 5000, "b": [[1]]}).encode())  # brackets in strings
    with pytest.raises(LimitExceeded, match="nested deeper than 64"):
        check(DEEP)
    with pytest.raises(LimitExceeded, match="exceeds this consumer's limit"):
        check(b"x" * 11, max_bytes=10)


async def test_poison_messages_are_dead_lettered_and_the_consumer_goes_on(make_bus: BusFactory) -> None:
    op = await make_bus("operator")
    svc = await make_bus("planner")
    runtime = ServiceRuntime("planner", svc)
    runtime.ready = True
    got: list[Heartbeat] = []
    done = asyncio.Event()

    async def handler(msg: Message) -> None:
        assert isinstance(msg, Heartbeat)
        if msg.seq == 13:
            raise RecursionError("maximum recursion depth exceeded")  # a handler that recurses too deep
        got.append(msg)
        if msg.seq == 99:
            done.set()

    await svc.consume("ops.heartbeat.ping", "planner-poison", handler, Heartbeat, max_deliver=2, backoff=(0.05,),
                      max_bytes=1 << 20)
    poison = {
        "deep": DEEP,
        "huge": b'{"kind":"heartbeat","source":"' + b"x" * (2 << 20) + b'"}',
        "utf8": b'{"kind":"heartbeat","source":"\xff\xfe"}',
        "type": encode(ToolRequest(source="x", tool="compile")),
    }
    for data in poison.values():
        await op.js.publish("ops.heartbeat.ping", data)
    await op.publish("ops.heartbeat.ping", Heartbeat(source="kpilot", seq=13))
    await op.publish("ops.heartbeat.ping", Heartbeat(source="kpilot", seq=99))
    await asyncio.wait_for(done.wait(), 20)
    letters = await _letters(op, 5)
    reasons = sorted(dl.reason for dl in letters)
    assert len(letters) == 5, reasons
    # a Heartbeat's decoder bounds the nesting (shared/limits.bounded_depth): it refuses the deep `seq` itself
    assert any("invalid message" in r and "Expected `int`, got `array` - at `$.seq`" in r for r in reasons), reasons
    assert any("exceeds this consumer's limit" in r and "payload cut" in r for r in reasons)
    assert any("invalid message" in r and "utf-8" in r.lower() for r in reasons)
    assert any("Expected `heartbeat`" in r or "Invalid value 'tool_request'" in r for r in reasons), reasons
    assert any("handler failed 2 times: RecursionError" in r for r in reasons)
    assert all(dl.original_subject == "ops.heartbeat.ping" for dl in letters)
    assert [m.seq for m in got] == [99]
    stats = svc.consumers["planner-poison"]
    for _ in range(200):  # the count follows the dead letter's stored ack, which the test may see first
        if stats.dead_lettered == 5:
            break
        await asyncio.sleep(0.01)
    assert stats.dead_lettered == 5, stats
    assert runtime.health().healthy and not svc.dead


async def test_unavailable_defers_without_using_up_tries(make_bus: BusFactory) -> None:
    op = await make_bus("operator")
    svc = await make_bus("planner")
    calls: list[float] = []
    done = asyncio.Event()

    async def handler(msg: Message) -> None:
        calls.append(time.monotonic())
        if len(calls) < 4:  # more deferrals than max_deliver: none of them counts as a try
            raise Unavailable("no toolrunner is up", retry_in_s=0.1)
        done.set()

    await svc.consume("ops.heartbeat.ping", "planner-defer", handler, Heartbeat, max_deliver=2)
    await op.publish("ops.heartbeat.ping", Heartbeat(source="kpilot"))
    await asyncio.wait_for(done.wait(), 20)
    stats = svc.consumers["planner-defer"]
    assert (stats.deferred, stats.handled, stats.dead_lettered, stats.retried) == (3, 1, 0, 0)


async def test_a_dead_consumer_loop_makes_health_unhealthy_and_ends_the_service(make_bus: BusFactory) -> None:
    svc = await make_bus("planner")
    runtime = ServiceRuntime("planner", svc)
    runtime.ready = True

    async def handler(msg: Message) -> None:
        return None

    await svc.consume("ops.heartbeat.ping", "planner-doomed", handler, Heartbeat)
    assert runtime.health().healthy
    task = next(t for t in svc._tasks if t.get_name() == "consume:planner-doomed")
    task.cancel()  # the loop ends while the service runs (what a bug in the loop would do)
    with pytest.raises(asyncio.CancelledError):
        await task
    health = runtime.health()
    assert not health.healthy and "planner-doomed" in health.details["dead"]
    assert await asyncio.wait_for(runtime.run_until_stopped(), 10) == EXIT_PART_DIED


async def test_endpoints_answer_poison_and_handler_bugs(make_bus: BusFactory) -> None:
    svc = await make_bus("toolrunner")
    runtime = ServiceRuntime("toolrunner", svc)
    await runtime.start()
    runtime.ready = True

    async def buggy(req) -> None:  # type: ignore[no-untyped-def]
        raise OSError(36, "File name too long")

    def structured(code: str, message: str) -> bytes:
        return encode(ToolResult(source="toolrunner", tool="t", tool_version="", ok=False,
                                 error={"code": code, "message": message}))  # type: ignore[arg-type]

    await runtime.add_endpoint("buggy", "tools.buggy", buggy, error_reply=structured, concurrent=True)
    await runtime.add_endpoint("plain", "tools.plain", buggy)
    client = await make_bus("verifier")
    deep = await client.nc.request("tools.buggy", DEEP, timeout=5)
    res = json.loads(deep.data)
    assert res["ok"] is False and res["error"]["code"] == "invalid_request" and "nested deeper" in res["error"][
        "message"]
    bug = await client.request("tools.buggy", ToolRequest(source="verifier", tool="buggy"), ToolResult,
                               timeout_s=5, responder="toolrunner")
    assert bug.error is not None and bug.error.code == "internal" and "File name too long" in bug.error.message
    with pytest.raises(ServiceFailed, match="File name too long"):
        await client.request("tools.plain", ToolRequest(source="verifier", tool="plain"), ToolResult, timeout_s=5)
    assert runtime.health().healthy
    assert [h.healthy for h in await instances(client, "toolrunner")] == [True]
    runtime.stop()
    await runtime.run_until_stopped()


async def test_a_watched_request_fails_fast_when_its_responder_dies(make_bus: BusFactory) -> None:
    svc = await make_bus("toolrunner")
    runtime = ServiceRuntime("toolrunner", svc)
    await runtime.start()
    taken = asyncio.Event()

    async def slow(req) -> None:  # type: ignore[no-untyped-def]
        taken.set()
        await asyncio.sleep(3600)

    await runtime.add_endpoint("slow", "tools.slow", slow, concurrent=True)
    client = await make_bus("verifier")
    call = asyncio.create_task(client.request("tools.slow", ToolRequest(source="verifier", tool="slow"),
                                              ToolResult, timeout_s=900, responder="toolrunner"))
    await asyncio.wait_for(taken.wait(), 10)
    t0 = time.monotonic()
    await svc.nc.close()  # the runner's connection goes as with kill -9: no reply, no unsubscribe
    with pytest.raises(ResponderLost, match="took the request and was gone"):
        await asyncio.wait_for(call, 30)
    assert time.monotonic() - t0 < 10  # seconds, not the 900 s timeout
    for t in svc._tasks:
        t.cancel()


class _Relay:
    """A TCP relay in front of the server. `drop()` cuts every connection through it, as a network blip
    or the loss of one server of a cluster does to the clients on it: they reconnect, the others do not."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.links: list[asyncio.StreamWriter] = []

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._link, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _link(self, down_r: asyncio.StreamReader, down_w: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.links += [down_w, up_w]

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(down_r, up_w), pipe(up_r, down_w))

    def drop(self) -> None:
        for w in self.links:
            w.close()
        self.links.clear()

    def close(self) -> None:
        self.drop()
        self.server.close()


async def test_a_watched_request_is_asked_again_when_its_responder_reconnects_mid_call(
        nats_server: EmbeddedServer, make_bus: BusFactory) -> None:
    """The toolrunner's connection drops while it works on a call and comes back (its server of a cluster
    restarted; CI's rolling-restart test lost a patch decision so): the server of its new connection
    refuses the reply (`allow_responses` is granted per connection, to the one the request came in on),
    while the caller's own connection never dropped, so nothing else would ever ask again."""
    relay = _Relay(nats_server.port)
    await relay.start()
    svc = await Bus.connect(nats_server.creds.url("toolrunner", "127.0.0.1", relay.port), "toolrunner")
    runtime = ServiceRuntime("toolrunner", svc)
    await runtime.start()
    reply = encode(ToolResult(source="toolrunner", tool="t", tool_version="1", ok=True))
    taken: list[str] = []

    async def cut_mid_call(req) -> None:  # type: ignore[no-untyped-def]
        taken.append(json.loads(req.data)["id"])
        if len(taken) == 1:
            relay.drop()
            while not (svc.reconnected_at and svc.nc.is_connected):  # the reconnect this test is about
                await asyncio.sleep(0.05)
        await req.respond(reply)

    await runtime.add_endpoint("cut", "tools.cut", cut_mid_call, concurrent=True)
    client = await make_bus("verifier")
    try:
        got = await asyncio.wait_for(client.request("tools.cut", ToolRequest(source="verifier", tool="cut"),
                                                    ToolResult, timeout_s=900, responder="toolrunner"), 20)
        assert got.ok and len(taken) == 2 and taken[0] == taken[1]  # the same request, asked again once
        assert client.reconnected_at == 0.0  # the caller itself never reconnected
    finally:
        runtime.stop()
        await runtime.run_until_stopped()
        relay.close()


async def test_a_watched_responder_is_gone_only_after_two_missed_pings_in_a_row(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One 'no responders' to a ping may be a responder re-subscribing on another server after a reconnect
    of its own (the request then goes on); a second in a row is its death."""
    import nats.errors

    import shared.bus as busmod
    monkeypatch.setattr(busmod, "_LIVENESS_S", 0.01)
    answers: list[bool] = []  # per ping: True answers, False is 'no responders'

    class Pinged:
        async def request(self, subject: str, data: bytes, timeout: float) -> None:
            if not answers.pop(0):
                raise nats.errors.NoRespondersError

    for script, gone in (([False, True, False, True], False), ([True, False, False], True)):
        answers[:] = script + [True] * 50
        watch = busmod._Watch(Pinged(), "toolrunner")  # type: ignore[arg-type]
        watch.acked(b'{"id": "abc", "instance": "vm-1", "service": "toolrunner"}')
        while len(answers) > 50 - (0 if gone else 3) and not watch.lost.done():
            await asyncio.sleep(0.01)
        assert watch.lost.done() is gone, script
        if gone:
            assert "took the request and was gone" in watch.lost.result()
        watch.stop()


async def test_a_quick_answer_comes_without_an_ack_and_slow_work_is_acknowledged(
        make_bus: BusFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    import shared.bus as busmod
    acks: list[bytes] = []
    real = busmod._Watch.acked

    def counted(self, data: bytes) -> None:  # type: ignore[no-untyped-def]
        acks.append(data)
        real(self, data)

    monkeypatch.setattr(busmod._Watch, "acked", counted)
    svc = await make_bus("toolrunner")
    runtime = ServiceRuntime("toolrunner", svc)
    await runtime.start()
    reply = encode(ToolResult(source="toolrunner", tool="t", tool_version="1", ok=True))

    async def quick(req) -> None:  # type: ignore[no-untyped-def]
        await req.respond(reply)  # answered in the task's first step, as a cache hit is

    async def slow(req) -> None:  # type: ignore[no-untyped-def]
        await asyncio.sleep(0.2)
        await req.respond(reply)

    await runtime.add_endpoint("quick", "tools.quick", quick, concurrent=True)
    await runtime.add_endpoint("slow", "tools.slow", slow, concurrent=True)
    client = await make_bus("verifier")
    for _ in range(3):
        got = await client.request("tools.quick", ToolRequest(source="verifier", tool="quick"), ToolResult,
                                   timeout_s=5, responder="toolrunner")
        assert got.ok
    await asyncio.sleep(0.1)
    assert acks == []  # the reply came in the write the ack would have: no ack to read
    got = await client.request("tools.slow", ToolRequest(source="verifier", tool="slow"), ToolResult,
                               timeout_s=5, responder="toolrunner")
    assert got.ok and len(acks) == 1 and json.loads(acks[0])["service"] == "toolrunner"
    runtime.stop()
    await runtime.run_until_stopped()


async def test_a_deleted_durable_consumer_is_recreated_and_the_consumer_goes_on(make_bus: BusFactory) -> None:
    op = await make_bus("operator")
    svc = await make_bus("planner")
    got: list[int] = []
    second = asyncio.Event()

    async def handler(msg: Message) -> None:
        got.append(msg.seq)  # type: ignore[attr-defined]
        if msg.seq == 2:  # type: ignore[attr-defined]
            second.set()

    await svc.consume("ops.heartbeat.ping", "planner-deleted", handler, Heartbeat)
    await op.publish("ops.heartbeat.ping", Heartbeat(source="kpilot", seq=1))
    deadline = time.monotonic() + 10
    while got != [1]:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    admin = await make_bus("admin")  # only admin may delete a consumer (least-privilege NATS)
    await admin.js.delete_consumer("OPS", "planner-deleted")  # an administrator's mistake, or a purge
    await op.publish("ops.heartbeat.ping", Heartbeat(source="kpilot", seq=2))
    await asyncio.wait_for(second.wait(), 60)
    assert got == [1, 2]  # the recreated durable replays seq 1 too: dropped as a duplicate
    assert svc.consumers["planner-deleted"].loop_restarts >= 1 and not svc.dead
