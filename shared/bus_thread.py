"""A bus client run on a daemon thread with its own event loop, for a workload that has no asyncio loop
(the launch publisher, the live capture agent). The subclass implements `run(stop)` and sets
`self._started` once it is connected; `start()` waits for that or raises the connection error."""

from __future__ import annotations

import asyncio
import threading
from typing import Self

from shared.bus import BusError


class BusThread:
    THREAD_NAME = "kpilot-bus-thread"
    WHAT = "bus client"  # named in the connection error
    url: str

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._start_error: BaseException | None = None

    async def run(self, stop: asyncio.Event) -> None:  # pragma: no cover - each subclass has its own
        raise NotImplementedError

    def start(self, timeout_s: float = 10.0) -> Self:
        """Start the daemon thread; raises BusError (with the fix) if NATS cannot be reached."""

        def main() -> None:
            async def go() -> None:
                self._loop = asyncio.get_running_loop()
                self._stop = asyncio.Event()
                await self.run(self._stop)

            try:
                asyncio.run(go())
            except BaseException as e:  # noqa: BLE001 - handed to start() in the caller's thread
                self._start_error = e
                self._started.set()

        self._thread = threading.Thread(target=main, name=self.THREAD_NAME, daemon=True)
        self._thread.start()
        if not self._started.wait(timeout_s):
            raise BusError(f"{self.WHAT}: no connection to {self.url} within {timeout_s} s")
        if self._start_error is not None:
            raise self._start_error
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Set the loop's stop event (the subclass's run finishes its work) and join the thread."""
        if self._thread is None:
            return
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout_s)
        self._thread = None
