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
import os
import signal
import socket
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import msgspec
import structlog
from nats.micro import ServiceConfig, add_service
from nats.micro.request import Request
from nats.micro.service import EndpointStats, Service

from shared import logging as kplog
from shared import metrics
from shared.bus import Bus, BusError
from shared.messages import Heartbeat, HeartbeatAck
from shared.natsauth import CA_ENV, CREDS_ENV
from shared.subjects import HEARTBEAT_ACK, HEARTBEAT_PING

VERSION = "0.1.0"
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

    def health(self) -> Health:
        return Health(service=self.name, instance=self.instance, version=VERSION,
                      healthy=self.ready and self.bus.nc.is_connected and not self._stop.is_set(),
                      consumers={k: msgspec.structs.asdict(v) for k, v in self.bus.consumers.items()},
                      details=self.details, metrics_url=self.metrics_url)

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
        """Run a background task of the service (a timer loop); it is cancelled when the bus closes."""
        task = asyncio.create_task(coro, name=name)
        self.bus._tasks.append(task)
        return task

    async def add_endpoint(self, name: str, subject: str, handler: Callable[[Request], Awaitable[None]],
                           *, queue_group: str | None = None) -> None:
        """A micro-service endpoint; instances of one service share `queue_group` (default: the name)."""
        assert self.micro is not None, "call after start()"
        await self.micro.add_endpoint(name=name, subject=subject,
                                      handler=metrics.timed_endpoint(self.name, name, handler),
                                      queue_group=queue_group or self.name)

    def stop(self) -> None:
        self._stop.set()

    async def run_until_stopped(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        await self._stop.wait()
        self.log.info("stopping")
        if self.micro is not None:
            await self.micro.stop()
        await self.bus.close()


Setup = Callable[[ServiceRuntime], Awaitable[None]]


async def run_service(name: str, setup: Setup, url: str, args: argparse.Namespace | None = None) -> None:
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
    await runtime.run_until_stopped()


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
        asyncio.run(run_service(name, setup, args.nats, args))
    except BusError as e:
        raise SystemExit(f"{name}: {e}") from None
