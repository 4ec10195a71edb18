"""The StateManager: what the telemetry service's adapter calls once per period.

It keeps one StateEncoder and one DetectorBank per GPU and the launch records of the recent window, and
turns a batch of samples into (StateVector, [StateChangeEvent]) pairs; each event's causation_id is its
vector's id, so a planner can walk from an event back to the state it was raised on. Pure: no I/O.

    mgr = StateManager(node="n0", period_s=15.0)
    mgr.add_launches(records)                      # from the SDK (over NATS) or a trace
    for vector, events in mgr.step(sampler.sample()):
        publish(telemetry_subject(...), vector); publish each event on state_event_subject(...)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from services.telemetry.detectors import DetectorBank
from services.telemetry.encoding import StateEncoder
from services.telemetry.records import LaunchRecord, RawSample
from services.telemetry.sdk import kernel_shares
from shared.kernel_classes import KernelClass
from shared.messages import StateChangeEvent, StateVector


class StateManager:
    """Encoders and detectors per GPU; kernel shares from launches of the last `share_window_s`.

    The share window defaults to max(period, 15 s): with 1 in 16 launches timed, a shorter window of a
    slow kernel may hold no timed launch at all. A launch record with gpu="" counts for every GPU.
    """

    def __init__(
        self,
        node: str,
        period_s: float = 15.0,
        *,
        share_window_s: float | None = None,
        source: str = "telemetry",
        kernel_classes: Mapping[str, KernelClass] | None = None,
    ) -> None:
        self.node = node
        self.period_s = period_s
        self.share_window_s = max(period_s, 15.0) if share_window_s is None else share_window_s
        self.source = source
        self.kernel_classes = dict(kernel_classes or {})
        self.encoders: dict[str, StateEncoder] = {}
        self.banks: dict[str, DetectorBank] = {}
        self.launches: list[LaunchRecord] = []

    def add_launches(self, records: Iterable[LaunchRecord]) -> None:
        self.launches.extend(records)

    def step(self, samples: Sequence[RawSample]) -> list[tuple[StateVector, list[StateChangeEvent]]]:
        if not samples:
            return []
        newest = max(s.ts for s in samples)
        self.launches = [r for r in self.launches if r.t_last >= newest - self.share_window_s]
        out = []
        for s in samples:
            enc = self.encoders.get(s.gpu)
            if enc is None:
                enc = self.encoders[s.gpu] = StateEncoder(
                    node=s.node, gpu=s.gpu, period_s=self.period_s, source=self.source
                )
                self.banks[s.gpu] = DetectorBank(
                    s.node, s.gpu, source=self.source, kernel_classes=self.kernel_classes
                )
            window = [r for r in self.launches if r.gpu in ("", s.gpu) and r.t_last <= s.ts]
            shares = kernel_shares(window)
            vector = enc.encode(s, shares)
            events = self.banks[s.gpu].feed(s, shares, causation_id=vector.id)
            out.append((vector, events))
        return out
