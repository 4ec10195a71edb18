"""shared/bus_thread.py: the background-thread lifecycle the launch publisher and the capture agent share."""

from __future__ import annotations

import asyncio

import pytest

from shared.bus import BusError
from shared.bus_thread import BusThread


class Runs(BusThread):
    url = "nats://127.0.0.1:1"

    def __init__(self) -> None:
        super().__init__()
        self.stopped = False

    async def run(self, stop: asyncio.Event) -> None:
        self._started.set()
        await stop.wait()
        self.stopped = True


class Fails(Runs):
    async def run(self, stop: asyncio.Event) -> None:
        raise BusError("cannot reach NATS at nats://127.0.0.1:1: start it with `kpilot up`")


class Hangs(Runs):
    WHAT = "test client"

    async def run(self, stop: asyncio.Event) -> None:
        await stop.wait()  # never connects


def test_start_returns_once_connected_and_stop_ends_run() -> None:
    t = Runs().start(timeout_s=5)
    t.stop()
    assert t.stopped and t._thread is None


def test_a_connection_error_is_raised_in_the_callers_thread() -> None:
    with pytest.raises(BusError, match="start it with `kpilot up`"):
        Fails().start(timeout_s=5)


def test_no_connection_within_the_timeout_names_the_client_and_url() -> None:
    h = Hangs()
    with pytest.raises(BusError, match=r"test client: no connection to nats://127.0.0.1:1 within 0.2 s"):
        h.start(timeout_s=0.2)
    h.stop()
