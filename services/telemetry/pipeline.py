"""What the telemetry service does with each message, without the bus: samples in, vectors and events out.

One StateManager per node (a LaunchRecord with gpu="" counts for every GPU of *its* node, and GPU keys are
only unique within a node). A sample not newer than the last one of its GPU (a redelivery, a trace
replayed twice with its original timestamps) is dropped and counted: the time axis needs readings in
time order.

    pipe = Pipeline(period_s=15.0)
    pipe.add_launches(batch)                        # a LaunchBatch from telemetry.launches.<node>
    for subject, msg in pipe.on_sample(sample):     # a DeviceSample from telemetry.samples.<node>.<gpu>
        publish(subject, msg)                       # the StateVector first, then its StateChangeEvents
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from services.telemetry.state import StateManager
from services.telemetry.wire import launch_records, raw_sample
from shared.kernel_classes import KernelClass
from shared.messages import DeviceSample, LaunchBatch, Message
from shared.subjects import state_event_subject, telemetry_subject, token


class PipelineStats(msgspec.Struct):
    samples: int = 0
    stale: int = 0
    launch_batches: int = 0
    vectors: int = 0
    events: int = 0


class Pipeline:
    def __init__(
        self,
        period_s: float = 15.0,
        *,
        source: str = "telemetry",
        kernel_classes: Mapping[str, KernelClass] | None = None,
    ) -> None:
        if not period_s > 0:
            raise ValueError(f"period_s must be > 0 seconds, got {period_s}")
        self.period_s = period_s
        self.source = source
        self.kernel_classes = dict(kernel_classes or {})
        self.managers: dict[str, StateManager] = {}
        self.last_ts: dict[tuple[str, str], float] = {}
        self.stats = PipelineStats()

    def _manager(self, node: str, period_s: float) -> StateManager:
        mgr = self.managers.get(node)
        if mgr is None:
            # A producer that states its period (replay of a 1 s trace) gets ring buffers sized for it.
            mgr = self.managers[node] = StateManager(
                node, period_s or self.period_s, source=self.source, kernel_classes=self.kernel_classes
            )
        return mgr

    def add_launches(self, batch: LaunchBatch) -> None:
        self.stats.launch_batches += 1
        self._manager(batch.node, 0.0).add_launches(launch_records(batch))

    def on_sample(self, msg: DeviceSample) -> list[tuple[str, Message]]:
        key = (msg.node, msg.gpu)
        last = self.last_ts.get(key)
        if last is not None and msg.sampled_at <= last:
            self.stats.stale += 1
            return []
        self.last_ts[key] = msg.sampled_at
        self.stats.samples += 1
        [(vector, events)] = self._manager(msg.node, msg.period_s).step([raw_sample(msg)])
        # The vector is caused by the sample message (events by the vector): event -> vector -> sample.
        vector = msgspec.structs.replace(vector, causation_id=msg.id, job_id=msg.job_id)
        node, gpu = token(msg.node), token(msg.gpu)
        out: list[tuple[str, Message]] = [(telemetry_subject(node, gpu), vector)]
        out += [(state_event_subject(e.event, node, gpu), e) for e in events]
        self.stats.vectors += 1
        self.stats.events += len(events)
        return out
