"""Traces and the bus: `kpilot record` (bus or local sampler -> trace file) and `kpilot replay`
(trace file -> DeviceSamples and LaunchBatches on the bus, through the telemetry service's real encoder
and detectors to StateVectors and StateChangeEvents).

Replay timestamps (`stamp`):
  shift     (default) t - t0 + now: the original spacing, starting now. With --speed > 1 the stamps run
            ahead of the wall clock, but every duration the detectors measure (30 s minimum durations,
            the 1-minute delta, the 5-minute trend) is the one recorded.
  scale     now + (t - t0) / speed: live-looking, but a 40 s phase replayed at 10x lasts 4 s of sample
            time, shorter than a detector's minimum duration, so fewer events fire.
  original  the recorded times; the telemetry service drops samples not newer than the last of their
            GPU, so replaying the same trace twice this way yields nothing the second time.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import msgspec
from nats.aio.msg import Msg

from services.telemetry.records import LaunchRecord, RawSample, Sampler
from services.telemetry.trace import Entry, Replayer, TraceHeader, TraceWriter, entry_ts, read_trace
from services.telemetry.wire import launch_batch, launch_records, raw_sample, sample_message
from shared.bus import Bus
from shared.messages import DeviceSample, LaunchBatch, StateChangeEvent, decode
from shared.subjects import launches_subject, sample_subject, token

Stamp = Literal["shift", "scale", "original"]
SOURCE = "kpilot"


class ReplayStats(msgspec.Struct):
    samples: int = 0
    launch_batches: int = 0
    launch_records: int = 0
    events: list[str] = []


def trace_period(entries: list[Entry]) -> float:
    """Median spacing of consecutive samples of one GPU in the trace (0.0 when under two samples)."""
    last: dict[str, float] = {}
    gaps: list[float] = []
    for e in entries:
        if isinstance(e, RawSample):
            if e.gpu in last and e.ts > last[e.gpu]:
                gaps.append(e.ts - last[e.gpu])
            last[e.gpu] = e.ts
    return statistics.median(gaps) if gaps else 0.0


def launch_node(header: TraceHeader, entries: list[Entry], node: str) -> str:
    """The node launch records are published for: --node, the header's, or the samples' only node."""
    if node or header.node:
        return node or header.node
    nodes = {e.node for e in entries if isinstance(e, RawSample)}
    if len(nodes) == 1:
        return nodes.pop()
    if any(isinstance(e, LaunchRecord) for e in entries):
        raise ValueError(f"the trace's launch records name no node (no node in the header, samples show "
                         f"{sorted(nodes)}); pass --node NAME")
    return ""


def stamper(mode: Stamp, t0: float, now: float, speed: float) -> Callable[[float], float]:
    if mode == "shift":
        return lambda t: t - t0 + now
    if mode == "scale":
        if speed == float("inf"):
            raise ValueError("--stamp scale divides time by --speed: give a finite speed")
        return lambda t: now + (t - t0) / speed
    return lambda t: t


async def replay(
    bus: Bus,
    path: str | Path,
    *,
    speed: float = 1.0,
    node: str = "",
    stamp: Stamp = "shift",
    linger_s: float = 3.0,
    on_event: Callable[[StateChangeEvent], None] | None = None,
) -> ReplayStats:
    """Publish the trace's entries with their spacing / speed; collect the state events they cause."""
    header, entries = read_trace(path)
    lnode = launch_node(header, entries, node)
    period = trace_period(entries)
    t0 = entry_ts(entries[0]) if entries else 0.0
    f = stamper(stamp, t0, time.time(), speed)
    if stamp == "scale":
        period /= speed
    stats = ReplayStats()
    nodes = {token(node)} if node else {token(e.node) for e in entries if isinstance(e, RawSample)}

    async def _event(raw: Msg) -> None:
        ev = decode(raw.data)
        if isinstance(ev, StateChangeEvent) and token(ev.node) in nodes:
            stats.events.append(f"{ev.event} {ev.edge} {ev.node}/{ev.gpu}: {ev.detail}")
            if on_event is not None:
                on_event(ev)

    sub = await bus.nc.subscribe("events.state.>", cb=_event)
    origin = f"replay:{Path(path).name}"
    pending: list[LaunchRecord] = []

    async def flush_launches() -> None:
        if pending:
            await bus.publish(launches_subject(lnode), launch_batch(pending, node=lnode, source=SOURCE))
            stats.launch_batches += 1
            stats.launch_records += len(pending)
            pending.clear()

    try:
        async for e in Replayer(entries, speed).aiter():
            if isinstance(e, LaunchRecord):
                pending.append(msgspec.structs.replace(e, t_first=f(e.t_first), t_last=f(e.t_last)))
                continue
            await flush_launches()  # launches drained before a sample are published before it
            s = msgspec.structs.replace(e, ts=f(e.ts), node=node or e.node)
            msg = sample_message(s, source=SOURCE, origin=origin, period_s=period)
            await bus.publish(sample_subject(s.node, s.gpu), msg)
            stats.samples += 1
        await flush_launches()
        await asyncio.sleep(linger_s)  # the last sample's events need a moment to come back
    finally:
        await sub.unsubscribe()
    return stats


# ---------------------------------------------------------------- record


class Recording:
    """Entries gathered in memory; the header (with what the samples say about their origin) is written
    with them at the end, so an interrupted recording still gets a complete file."""

    def __init__(self, node: str, method: str) -> None:
        self.node = node
        self.method = method
        self.entries: list[Entry] = []
        self.origins: set[str] = set()
        self.gpu_names: set[str] = set()
        self.provenance: dict[str, str] = {}

    @property
    def samples(self) -> int:
        return sum(isinstance(e, RawSample) for e in self.entries)

    def add_message(self, data: bytes) -> None:
        msg = decode(data)
        if isinstance(msg, DeviceSample):
            self.origins.add(msg.origin or msg.source)
            self.gpu_names.add(msg.gpu_name)
            self.entries.append(raw_sample(msg))
        elif isinstance(msg, LaunchBatch):
            self.entries.extend(launch_records(msg))

    def write(self, out: str | Path) -> int:
        prov = {"device": ", ".join(sorted(n for n in self.gpu_names if n)), **self.provenance}
        prov["method"] = self.method + (f"; sample origins: {', '.join(sorted(self.origins))}"
                                        if self.origins else "")
        header = TraceHeader(created=time.time(), node=self.node, note="kpilot record", provenance=prov)
        self.entries.sort(key=entry_ts)
        with TraceWriter(out, header) as w:
            w.write_all(self.entries)
        return w.count


async def record_bus(url: str, out: str | Path, *, node: str = "*", duration_s: float | None = None,
                     samples: int | None = None) -> Recording:
    """Record DeviceSamples and LaunchBatches of `node` ('*' = all) from the bus until the duration or
    sample count is reached (or the task is cancelled, e.g. Ctrl-C)."""
    subjects = (f"telemetry.samples.{token(node) if node != '*' else '*'}.>",
                f"telemetry.launches.{token(node) if node != '*' else '*'}")
    rec = Recording("" if node == "*" else node, f"kpilot record from NATS {', '.join(subjects)}")
    done = asyncio.Event()

    async def _on(raw: Msg) -> None:
        try:
            rec.add_message(raw.data)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            print(f"kpilot record: skipped an invalid message on {raw.subject}: {e}", file=sys.stderr)
        if samples is not None and rec.samples >= samples:
            done.set()

    bus = await Bus.connect(url, SOURCE)
    subs = [await bus.nc.subscribe(s, cb=_on) for s in subjects]
    try:
        try:
            await asyncio.wait_for(done.wait(), timeout=duration_s)
        except TimeoutError:
            pass
    finally:
        for s in subs:
            await s.unsubscribe()
        await bus.close()
        rec.write(out)
    return rec


def record_local(sampler: Sampler, out: str | Path, *, node: str, how: str, period_s: float,
                 duration_s: float | None = None, samples: int | None = None,
                 provenance: dict[str, str] | None = None) -> Recording:
    """Sample the device directly every `period_s` (no bus; launch telemetry is not recorded)."""
    rec = Recording(node, f"kpilot record --local ({how}), every {period_s:g} s; no launch records")
    rec.provenance.update(provenance or {})
    t_end = None if duration_s is None else time.monotonic() + duration_s
    next_t = time.monotonic()
    try:
        while (t_end is None or time.monotonic() < t_end) and (samples is None or rec.samples < samples):
            for s in sampler.sample():
                rec.origins.add(how.split(":")[0])
                rec.gpu_names.add(s.gpu_name)
                rec.entries.append(s)
            next_t += period_s
            time.sleep(max(0.0, next_t - time.monotonic()))
    finally:
        sampler.close()
        rec.write(out)
    return rec
