"""What every service shares: connect, register as a NATS micro service, answer heartbeats and health,
run until SIGTERM, then drain. A service's own adapter only adds its consumers and endpoints.

    # services/planner/__main__.py
    from shared.service import serve
    from services.planner.service import setup
    serve("planner", setup)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import msgspec
import structlog
from nats.micro import ServiceConfig, add_service
from nats.micro.request import Request
from nats.micro.service import EndpointStats, Service

from shared import limits, metrics
from shared import logging as kplog
from shared.bus import ACK_TO_HEADER, ASK_AGAIN_PREFIX, Bus, BusError
from shared.messages import Heartbeat, HeartbeatAck
from shared.natsauth import CA_ENV, CREDS_ENV
from shared.subjects import HEARTBEAT_ACK, HEARTBEAT_PING

VERSION = "0.1.0"
# How long an answered reply may still sit in the client's write buffer: a reconnect within it may have
# cost the reply (nats-py writes the buffer to the new server, which refuses it).
_UNWRITTEN_S = 2.0
DEFAULT_NATS = "nats://127.0.0.1:4222"


class Health(msgspec.Struct):
    service: str
    instance: str
    version: str
    healthy: bool
    consumers: dict[str, dict[str, int]]
    details: dict[str, str] = {}
    metrics_url: str = ""  # this instance's Prometheus endpoint (shared/metrics.py)


def health_subject(service: str) -> str:
    return f"health.{service}"


# The exit status of a service that ended itself because part of it died (a consumer loop, a timer
# task): its supervisor restarts it (services/kpilot/supervisor.py), `kpilot status` shows the code.
EXIT_PART_DIED = 70

ErrorReply = Callable[[str, str], bytes]
"""Builds an endpoint's structured error answer from (code, message), e.g. a ToolResult with ok=False."""


class ServiceRuntime:
    """One running instance of a service: its bus, its micro service and its counters."""

    def __init__(self, name: str, bus: Bus) -> None:
        self.name = name
        self.bus = bus
        self.instance = f"{socket.gethostname()}-{os.getpid()}"
        self.micro: Service | None = None
        self.details: dict[str, str] = {}  # shown by `kpilot status` (e.g. the runner's GPU)
        self.log = structlog.get_logger().bind(service=name, instance=self.instance)
        self._stop = asyncio.Event()
        self.ready = False  # set once the service's own setup has finished
        self.args = argparse.Namespace()  # the parsed CLI, including a service's own `add_args` options
        self.metrics_url = ""
        self.exit_code = 0
        self.dead: dict[str, str] = {}  # spawned task -> why it died
        self._inflight: set[asyncio.Task[None]] = set()
        self._after: set[asyncio.Task[None]] = set()  # after_reply's bookkeeping, finished on stop
        # (when, ack subject) of watched requests answered lately: a reconnect now may have cost the reply
        self._answered: deque[tuple[float, str]] = deque()
        bus.on_fatal = self.fatal
        bus.reconnect_hooks.append(self._on_reconnect)

    def health(self) -> Health:
        dead = {**self.bus.dead, **self.dead}
        details = {**self.details, **({"dead": "; ".join(f"{k}: {v}" for k, v in dead.items())} if dead else {})}
        return Health(service=self.name, instance=self.instance, version=VERSION,
                      healthy=self.ready and self.bus.nc.is_connected and not self._stop.is_set() and not dead,
                      consumers={k: msgspec.structs.asdict(v) for k, v in self.bus.consumers.items()},
                      details=details, metrics_url=self.metrics_url)

    def fatal(self, reason: str) -> None:
        """Part of the service died for good: report unhealthy and end with EXIT_PART_DIED, so the
        supervisor starts a fresh process (which resumes from the durable consumers)."""
        if self._stop.is_set():
            return
        self.log.error("part of the service died, exiting for a restart", reason=reason)
        self.exit_code = EXIT_PART_DIED
        self.stop()

    # ------------------------------------------------------------ replies a reconnect refused

    def _answered_watched(self, ack_to: str, taken: int) -> None:
        """A watched request was answered. Its reply left on the connection it came in on, unless the
        connection dropped and came back since it was taken: the server of the new one refuses the reply
        (`allow_responses` is per connection), so the caller is asked to send the request again."""
        if self.bus.reconnects != taken:
            self._ask_again(ack_to, f"{self.name} {self.instance} reconnected while it worked on the request")
            return
        now = time.monotonic()
        self._answered.append((now, ack_to))
        while self._answered and self._answered[0][0] < now - _UNWRITTEN_S:
            self._answered.popleft()

    def _on_reconnect(self) -> None:
        """A reply still in the client's write buffer when the connection dropped goes out on the new
        connection, and is refused: the requests answered just before ask again."""
        cutoff = time.monotonic() - _UNWRITTEN_S
        recent = [ack_to for t, ack_to in self._answered if t >= cutoff]
        self._answered.clear()
        for ack_to in recent:
            self._ask_again(ack_to, f"{self.name} {self.instance} answered just before a reconnect")

    def _ask_again(self, ack_to: str, why: str) -> None:
        async def _send() -> None:
            with contextlib.suppress(Exception):  # the caller may be gone; its own timeout applies then
                await self.bus.nc.publish(ack_to, ASK_AGAIN_PREFIX + why.encode())

        task = asyncio.get_running_loop().create_task(_send(), name="ask-again")
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)

    def after_reply(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        """Run an endpoint's bookkeeping (its audit record, its log line) once its reply is written.

        Called right after `req.respond`: the reply is in the connection's buffer and the flusher has
        been woken, so this task runs after the reply's write. The reply then leaves in a write of its
        own: nats-server flushes deliveries once per read of a client's buffer, and an audit record
        (a JetStream store) in the same read held the reply back. The endpoint's own task still ends in
        one step (a cache hit needs no acknowledgement, see add_endpoint). Failures are logged; on stop
        these tasks are given up to 2 s to finish, not cancelled (an audit record is not dropped)."""
        async def _run() -> None:
            try:
                await coro
            except Exception:  # bookkeeping must not take the service down
                self.log.exception("after-reply work failed", work=name)

        task = asyncio.get_running_loop().create_task(_run(), name=f"after-reply:{name}")
        self._after.add(task)
        task.add_done_callback(self._after.discard)

    def _stats(self, _endpoint: EndpointStats) -> object:
        return msgspec.to_builtins(self.health())

    async def start(self, metadata: dict[str, str] | None = None) -> None:
        self.micro = await add_service(self.bus.nc, ServiceConfig(
            name=self.name, version=VERSION, description=f"kernelpilot {self.name}",
            metadata={"instance": self.instance, **(metadata or {})}, stats_handler=self._stats))

        async def _health(req: Request) -> None:
            await req.respond(msgspec.json.encode(self.health()))

        # Each instance answers health on its own (no queue group), so status sees every instance.
        await self.micro.add_endpoint(name="health", subject=health_subject(self.name), handler=_health,
                                      queue_group=f"health-{self.instance}")
        await self.bus.consume(HEARTBEAT_PING, f"{self.name}-heartbeat", self._on_heartbeat, Heartbeat,
                               new_only=True)

    async def _on_heartbeat(self, ping: Heartbeat) -> None:
        ack = HeartbeatAck(source=self.name, service=self.name, instance=self.instance, version=VERSION,
                           **ping.caused())
        await self.bus.publish(f"{HEARTBEAT_ACK}.{self.name}", ack)

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Run a background task of the service (a timer loop); it is cancelled when the bus closes. A
        task that ends with an exception, or is cancelled while the service runs, ends the service."""
        task = asyncio.create_task(coro, name=name)
        self.bus._tasks.append(task)

        def _done(t: asyncio.Task[None]) -> None:
            if self._stop.is_set() or self.bus._stopping.is_set():
                return
            if t.cancelled():
                reason = "cancelled"
            elif (e := t.exception()) is not None:
                reason = f"{type(e).__name__}: {e}"[:500]
            else:
                return  # a task that finished its work
            self.dead[name] = reason
            self.fatal(f"task {name}: {reason}")

        task.add_done_callback(_done)
        return task

    async def wait_for(self, service: str) -> None:
        """Return once an instance of `service` reports healthy (its micro stats carry its health), so a
        service does not take work its dependency must do (the verifier waits for a toolrunner). Until
        then `kpilot status` shows `waiting_for` in this service's details."""
        self.details["waiting_for"] = service
        start, next_log = time.monotonic(), 0.0
        while not self._stop.is_set():
            if any(h.healthy for h in await instances(self.bus, service, wait_s=0.5)):
                break
            if (waited := time.monotonic() - start) >= next_log:
                self.log.info("waiting for a dependency", dependency=service, waited_s=round(waited, 1))
                next_log = waited + 10.0
            await asyncio.sleep(0.5)
        self.details.pop("waiting_for", None)

    async def add_endpoint(self, name: str, subject: str, handler: Callable[[Request], Awaitable[None]],
                           *, queue_group: str | None = None, concurrent: bool = False,
                           error_reply: ErrorReply | None = None) -> None:
        """A micro-service endpoint; instances of one service share `queue_group` (default: the name).

        Every request is acknowledged to a caller that asks (`Bus.request(responder=...)` watches this
        instance while it works), checked against the nesting-depth limit before the handler decodes it,
        and answered even when the handler raises: with `error_reply(code, message)` when given (a
        structured record), else a micro-service error. `concurrent` handles each request in its own task
        (long tool calls), so a slow one blocks no other."""
        assert self.micro is not None, "call after start()"
        ack = msgspec.json.encode({"id": self.micro.id, "instance": self.instance, "service": self.name})
        log = self.log.bind(endpoint=name)

        async def answer_error(req: Request, code: str, message: str) -> None:
            with contextlib.suppress(Exception):  # the caller may be gone; nothing else to tell
                if error_reply is not None:
                    await req.respond(error_reply(code, message))
                else:
                    await req.respond_error("400" if code == "invalid_request" else "500", message)

        async def guarded(req: Request) -> None:
            try:
                limits.check(req.data)
            except limits.LimitExceeded as e:
                await answer_error(req, "invalid_request", str(e))
                return
            try:
                await handler(req)
            except Exception as e:  # a handler bug answers the caller and the service goes on
                log.exception("endpoint handler failed")
                await answer_error(req, "internal", f"{name} failed: {type(e).__name__}: {str(e)[:500]}")

        async def watched(req: Request, ack_to: str, taken: int) -> None:
            await guarded(req)
            self._answered_watched(ack_to, taken)

        async def entry(req: Request) -> None:
            ack_to = (req.headers or {}).get(ACK_TO_HEADER)
            work = watched(req, ack_to, self.bus.reconnects) if ack_to else guarded(req)
            if not concurrent:
                if ack_to:
                    with contextlib.suppress(Exception):
                        await self.bus.nc.publish(ack_to, ack)
                await work
                return
            task = asyncio.create_task(work, name=f"endpoint:{name}")
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)
            if ack_to:
                # The task's first step runs before this one resumes: a quick answer (a cache hit) is then
                # buffered already and leaves in the same write the ack would, so the ack (a message the
                # caller must read and a watch it must arm) is left out. Work that is still running is
                # acknowledged, and the caller watches this instance.
                await asyncio.sleep(0)
                if not task.done():
                    with contextlib.suppress(Exception):
                        await self.bus.nc.publish(ack_to, ack)

        await self.micro.add_endpoint(name=name, subject=subject, handler=metrics.timed_endpoint(self.name, name, entry),
                                      queue_group=queue_group or self.name)

    def stop(self) -> None:
        self._stop.set()

    async def run_until_stopped(self) -> int:
        """Serve until SIGTERM/SIGINT or a fatal failure; the process's exit status."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        await self._stop.wait()
        self.log.info("stopping", exit_code=self.exit_code)
        if self.micro is not None:
            with contextlib.suppress(Exception):
                await self.micro.stop()
        for task in list(self._inflight):
            task.cancel()
        if self._after:
            await asyncio.wait(list(self._after), timeout=2.0)
        await self.bus.close()
        return self.exit_code


async def instances(bus: Bus, service: str, *, wait_s: float = 0.5) -> list[Health]:
    """The health of every instance of `service` that answers `$SRV.STATS.<service>` within `wait_s`
    (its stats carry its health: ServiceRuntime._stats); [] when none is up."""
    inbox = bus.nc.new_inbox()
    sub = await bus.nc.subscribe(inbox)
    found: list[Health] = []
    try:
        await bus.nc.publish(f"$SRV.STATS.{service}", b"", reply=inbox)
        deadline = time.monotonic() + wait_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = await sub.next_msg(timeout=left)
            except Exception:  # noqa: BLE001 - wait over, or the connection went
                break
            with contextlib.suppress(Exception):  # a no-responders status, or a stranger's reply
                stats = msgspec.json.decode(msg.data)
                data = next(e.get("data") for e in stats.get("endpoints", []) if e.get("name") == "health")
                found.append(msgspec.convert(data, Health))
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
    return found


Setup = Callable[[ServiceRuntime], Awaitable[None]]


async def run_service(name: str, setup: Setup, url: str, args: argparse.Namespace | None = None) -> int:
    bus = await Bus.connect(url, name, creds_file=getattr(args, "creds_file", None),
                            tls_ca=getattr(args, "tls_ca", None))
    runtime = ServiceRuntime(name, bus)
    if args is not None:
        runtime.args = args
    runtime.metrics_url = metrics.Endpoint.start(name, runtime.instance, VERSION,
                                                 host=getattr(runtime.args, "metrics_host", "127.0.0.1"),
                                                 port=getattr(runtime.args, "metrics_port", 0))
    await runtime.start()
    await setup(runtime)
    runtime.ready = True
    runtime.log.info("serving", nats=url.split("@")[-1])
    return await runtime.run_until_stopped()


def serve(name: str, setup: Setup, argv: list[str] | None = None,
          add_args: Callable[[argparse.ArgumentParser], None] | None = None) -> None:
    """The `python -m services.<name>` entry point; `add_args` adds the service's own options, which
    its setup reads from `runtime.args`."""
    parser = argparse.ArgumentParser(prog=f"python -m services.{name}", description=f"kernelpilot {name}")
    parser.add_argument("--nats", default=os.environ.get("KPILOT_NATS", DEFAULT_NATS),
                        help="NATS URL (default: $KPILOT_NATS or %(default)s); credentials in --creds-file")
    parser.add_argument("--creds-file", default=os.environ.get(CREDS_ENV),
                        help="a 0600 JSON file {user, password} with this service's NATS credentials "
                             "(default: $KPILOT_NATS_CREDS; `kpilot up` writes <state-dir>/creds/<name>.json)")
    parser.add_argument("--tls-ca", default=os.environ.get(CA_ENV),
                        help="CA file of a TLS server (default: $KPILOT_NATS_CA; `kpilot up --tls` writes it)")
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--metrics-host", default="127.0.0.1", help="address of the /metrics endpoint")
    parser.add_argument("--metrics-port", type=int, default=0,
                        help="port of the Prometheus /metrics endpoint (default 0: any free port)")
    if add_args is not None:
        add_args(parser)
    args = parser.parse_args(argv)
    kplog.configure(name, args.log_level)
    try:
        code = asyncio.run(run_service(name, setup, args.nats, args))
    except BusError as e:
        raise SystemExit(f"{name}: {e}") from None
    raise SystemExit(code)
