"""Publishes a workload's launch telemetry: drain every `interval_s`, send one LaunchBatch on
`telemetry.launches.<node>`.

    from services.telemetry.sdk import LaunchTelemetry
    from services.telemetry.sdk_publish import LaunchPublisher
    tel = LaunchTelemetry(sample_fraction=1 / 16, gpu=gpu_uuid)
    tel.instrument(matmul_kernel); tel.install()
    pub = LaunchPublisher(tel, "nats://127.0.0.1:4222").start()   # a daemon thread with its own loop
    ...                                                           # the workload runs
    pub.stop()                                                    # last drain, publish, disconnect

The hot path is untouched: the hooks only count (sdk.py); this thread wakes once per interval, drains
(one lock, one record per kernel/grid/config) and publishes. A workload that runs an asyncio loop can
`await pub.run(stop_event)` instead of starting a thread. The node name must match the one the telemetry
service puts on its samples (both default to the hostname). Records whose publish failed are kept and
sent with the next batch (at most MAX_PENDING; older ones are dropped and counted).
"""

from __future__ import annotations

import asyncio
import os
import socket

import msgspec

from services.telemetry.records import LaunchRecord
from services.telemetry.sdk import LaunchTelemetry
from services.telemetry.wire import launch_batch
from shared.bus import Bus, BusError
from shared.bus_thread import BusThread
from shared.subjects import launches_subject

# 5 s: three batches inside the service's 15 s launch-share window, so one lost batch costs a third of it.
DEFAULT_INTERVAL_S = 5.0
MAX_PENDING = 10_000  # records kept across failed publishes (one per kernel/grid/config per interval)


class PublisherStats(msgspec.Struct):
    batches: int = 0
    records: int = 0
    failures: int = 0
    dropped_records: int = 0
    last_error: str = ""


class LaunchPublisher(BusThread):
    THREAD_NAME = "kpilot-launch-publisher"
    WHAT = "launch publisher"

    def __init__(
        self,
        telemetry: LaunchTelemetry,
        url: str,
        *,
        node: str = "",
        interval_s: float = DEFAULT_INTERVAL_S,
        source: str = "",
    ) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s is seconds between batches, > 0; got {interval_s}")
        self.telemetry = telemetry
        self.url = url
        self.node = node or socket.gethostname()
        self.interval_s = interval_s
        self.source = source or f"workload:{os.getpid()}"
        self.stats = PublisherStats()
        self._pending: list[LaunchRecord] = []
        self._dropped_seen = 0
        super().__init__()

    async def publish_once(self, bus: Bus) -> bool:
        """Drain and publish one batch (nothing when nothing was launched). False when the publish failed."""
        self._pending.extend(self.telemetry.drain())
        if len(self._pending) > MAX_PENDING:
            cut = len(self._pending) - MAX_PENDING
            self.stats.dropped_records += cut
            del self._pending[:cut]
        if not self._pending:
            return True
        dropped = self.telemetry.dropped - self._dropped_seen
        batch = launch_batch(self._pending, node=self.node, source=self.source, pid=os.getpid(),
                             dropped=dropped)
        try:
            await bus.publish(launches_subject(self.node), batch)
        except BusError as e:
            self.stats.failures += 1
            self.stats.last_error = str(e)
            return False
        self._dropped_seen += dropped
        self.stats.batches += 1
        self.stats.records += len(self._pending)
        self._pending = []
        return True

    async def run(self, stop: asyncio.Event, bus: Bus | None = None) -> None:
        """Publish every interval until `stop` is set, then publish what is left."""
        own = bus is None
        bus = bus or await Bus.connect(self.url, self.source)
        self._started.set()
        try:
            while not stop.is_set():
                try:
                    await asyncio.wait_for(stop.wait(), timeout=self.interval_s)
                except TimeoutError:
                    pass
                await self.publish_once(bus)
        finally:
            if own:
                await bus.close()

