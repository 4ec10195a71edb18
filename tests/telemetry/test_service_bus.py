"""The telemetry service on a real nats-server: samples and launches in, vectors and state events out,
`kpilot replay`/`record` and the SDK publisher around it.

SYNTHETIC TEST INPUT: the traces built in these tests (`_synthetic_trace`) hold sample values stated
below, chosen to cross the detectors' thresholds; they test the bus and detector path and are not
measurements of any GPU. Recorded H200 traces under examples/traces/*.jsonl are replayed by
`test_recorded_trace_replays_to_the_same_events_as_offline` (skipped until one is committed).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from services.telemetry import bustrace
from services.telemetry.pipeline import Pipeline
from services.telemetry.records import LaunchRecord, RawSample
from services.telemetry.sdk import LaunchTelemetry
from services.telemetry.sdk_publish import LaunchPublisher
from services.telemetry.service import setup
from services.telemetry.trace import TraceHeader, TraceWriter, read_trace
from services.telemetry.wire import launch_batch, sample_message
from shared.messages import LaunchBatch, StateChangeEvent, StateVector, decode
from shared.service import ServiceRuntime, health_subject
from tests.conftest import BusFactory
from tests.telemetry.helpers import sample

ROOT = Path(__file__).resolve().parents[2]
TRACES = sorted((ROOT / "examples" / "traces").glob("*.jsonl"))
KINDS = {"tc_underutilization", "bandwidth_low", "l2_miss_spike", "occupancy_drop", "throttling", "anomaly"}


async def start_service(make_bus: BusFactory, **opts: Any) -> ServiceRuntime:
    runtime = ServiceRuntime("telemetry", await make_bus("telemetry"))
    runtime.args = argparse.Namespace(**{"period": 1.0, "sampler": "none", "dcgm": "", "node": "",
                                         "shard": "*", **opts})
    await runtime.start()
    await setup(runtime)
    runtime.ready = True
    return runtime


def _synthetic_trace(path: Path, node: str = "n0") -> list[RawSample | LaunchRecord]:
    """SYNTHETIC: a GEMM with the tensor pipe at 10 % for 60 s, then 70 %; power capping from 90 s.
    One sample and one launch record every 5 s for 120 s."""
    entries: list[RawSample | LaunchRecord] = []
    for i in range(25):
        t = 1000.0 + 5.0 * i
        entries.append(LaunchRecord(kernel="matmul_kernel", launches=200, t_first=t - 4.5, t_last=t - 0.5,
                                    grid=[128, 128, 1], config={"BLOCK_M": 32, "num_warps": 4},
                                    durations_us=[790.0, 805.0]))
        tc = 10.0 if t < 1060.0 else 70.0
        reasons = ["sw_power_cap"] if t >= 1090.0 else []
        s = sample(t, reasons=reasons, tensor_core_util=tc, sm_active=95.0, gpu_util=99.0, sm_clock=1980.0)
        entries.append(msgspec.structs.replace(s, node=node))
    with TraceWriter(path, TraceHeader(created=0.0, node=node, note="SYNTHETIC test input")) as w:
        w.write_all(entries)
    return entries


def offline_events(path: Path, period_s: float) -> list[tuple[str, str, str]]:
    """The events the same trace gives through the pure pipeline, in order, as (event, edge, gpu)."""
    header, entries = read_trace(path)
    node = bustrace.launch_node(header, entries, "")
    pipe, out, pending = Pipeline(period_s), [], []
    for e in entries:
        if isinstance(e, LaunchRecord):
            pending.append(e)
            continue
        if pending:
            pipe.add_launches(launch_batch(pending, node=node, source="t"))
            pending = []
        for _, m in pipe.on_sample(sample_message(e, source="t", period_s=bustrace.trace_period(entries))):
            if isinstance(m, StateChangeEvent):
                out.append((m.event, m.edge, m.gpu))
    return out


async def test_replayed_synthetic_trace_raises_events_through_the_service(
    make_bus: BusFactory, tmp_path: Path
) -> None:
    await start_service(make_bus)
    op = await make_bus("operator")
    vectors: dict[str, StateVector] = {}
    events: list[tuple[str, StateChangeEvent]] = []

    async def on_msg(raw: Any) -> None:
        m = decode(raw.data)
        if isinstance(m, StateVector):
            vectors[m.id] = m
        elif isinstance(m, StateChangeEvent):
            events.append((raw.subject, m))

    await op.nc.subscribe("telemetry.state.>", cb=on_msg)
    await op.nc.subscribe("events.state.>", cb=on_msg)
    trace = tmp_path / "synthetic.jsonl"
    _synthetic_trace(trace)
    stats = await bustrace.replay(op, trace, speed=40.0, linger_s=1.5)  # 120 s of samples in ~3 s

    got = [(e.event, e.edge, e.gpu) for _, e in events]
    assert stats.samples == 25 and stats.launch_records == 25 and len(vectors) == 25
    assert got == offline_events(trace, 1.0)  # the bus path changes nothing the detectors see
    assert ("tc_underutilization", "start", "GPU-0") in got
    assert ("tc_underutilization", "clear", "GPU-0") in got
    assert ("throttling", "start", "GPU-0") in got
    assert {e.event for _, e in events} <= KINDS
    for subject, e in events:
        assert subject == f"events.state.{e.event}.n0.GPU-0"
        assert vectors[e.causation_id].gpu == "GPU-0"  # type: ignore[index]
    start = next(e for _, e in events if (e.event, e.edge) == ("tc_underutilization", "start"))
    assert start.hot_kernels[0].kernel == "matmul_kernel"
    assert len(stats.events) == len(events)  # replay reports the events it caused


async def test_health_says_there_is_no_device_sampler(make_bus: BusFactory) -> None:
    await start_service(make_bus, sampler="auto")  # this machine has no GPU and no exporter configured
    op = await make_bus("operator")
    reply = await op.nc.request(health_subject("telemetry"), b"", timeout=2.0)
    details = json.loads(reply.data)["details"]
    assert details["sampler"].startswith("none: unavailable: no GPU")
    assert details["period_s"] == "1"


async def test_sdk_publisher_batches_reach_the_service(make_bus: BusFactory, nats_server: Any) -> None:
    await start_service(make_bus)
    op = await make_bus("operator")
    got: list[LaunchBatch] = []
    sub = await op.nc.subscribe("telemetry.launches.>", cb=functools.partial(_append, got))

    class Done:  # launches finish as soon as asked: a stand-in for CUDA events on this GPU-less machine
        def start(self) -> int:
            return 0

        def stop(self, token: int) -> None:
            pass

        def elapsed_us(self, token: int) -> float:
            return 250.0

        def release(self, token: int) -> None:
            pass

    class Meta:
        def get(self) -> dict[str, str]:
            return {"name": "add_kernel"}

    tel = LaunchTelemetry(sample_fraction=1 / 2, timer=Done(), gpu="GPU-0")
    pub = LaunchPublisher(tel, nats_server.url("operator"), node="n0", interval_s=0.2).start()
    for _ in range(6):
        tel.on_enter(Meta())
        tel.on_exit(Meta())
    await asyncio.sleep(0.6)
    pub.stop()
    await sub.unsubscribe()
    assert sum(r.launches for b in got for r in b.records) == 6
    assert sum(len(r.durations_us) for b in got for r in b.records) == 3
    assert {b.node for b in got} == {"n0"} and pub.stats.failures == 0


async def _append(into: list[LaunchBatch], raw: Any) -> None:
    into.append(decode(raw.data, LaunchBatch))  # type: ignore[arg-type]


async def test_record_from_the_bus_round_trips_a_replay(
    make_bus: BusFactory, nats_server: Any, tmp_path: Path
) -> None:
    op = await make_bus("operator")
    src, out = tmp_path / "synthetic.jsonl", tmp_path / "recorded.jsonl"
    entries = _synthetic_trace(src)
    rec = asyncio.create_task(bustrace.record_bus(nats_server.url("operator"), out, node="n0", samples=25,
                                                  duration_s=20.0))
    await asyncio.sleep(0.3)  # subscriptions in place
    await bustrace.replay(op, src, speed=float("inf"), stamp="original", linger_s=0.0)
    await rec
    header, got = read_trace(out)
    samples = [e for e in got if isinstance(e, RawSample)]
    assert samples == [e for e in entries if isinstance(e, RawSample)]
    assert sum(isinstance(e, LaunchRecord) for e in got) == 25
    assert header.node == "n0" and "replay:synthetic.jsonl" in header.provenance["method"]


@pytest.mark.skipif(not TRACES, reason="no recorded trace under examples/traces/*.jsonl yet: run "
                    "examples/traces/capture_trace.py on the H200 and commit its output")
@pytest.mark.parametrize("trace", TRACES, ids=[t.name for t in TRACES])
async def test_recorded_trace_replays_to_the_same_events_as_offline(make_bus: BusFactory, trace: Path) -> None:
    await start_service(make_bus)
    op = await make_bus("operator")
    _, entries = read_trace(trace)
    samples = [e for e in entries if isinstance(e, RawSample)]
    span = samples[-1].ts - samples[0].ts if samples else 0.0
    stats = await bustrace.replay(op, trace, speed=max(1.0, span / 10.0), linger_s=2.0)  # ~10 s
    expected = offline_events(trace, 1.0)
    got = [tuple(line.split(" ", 2)[:2]) for line in stats.events]
    assert stats.samples == len(samples)
    assert got == [(ev, edge) for ev, edge, _ in expected]
    assert {ev for ev, _ in got} <= KINDS
