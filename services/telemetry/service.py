"""NATS adapter of the telemetry service.

Consumes DeviceSamples on `telemetry.samples.<shard>.>` (its own sampler's, `kpilot replay`'s) and
LaunchBatches on `telemetry.launches.<shard>` (the workload SDK's); publishes a StateVector per sample on
`telemetry.state.<node>.<gpu>` and StateChangeEvents on `events.state.<kind>.<node>.<gpu>`; answers
`profile.kernel` with one kernel's ncu counters (profile_endpoint.py, via `tools.ncu_profile`); asks the
workload for a hot kernel with no task and registers the captured task (capture_bus.py). The
device sampler (NVML, or dcgm-exporter with --dcgm) publishes onto the samples subject, so what the
detectors see is exactly what `kpilot record` records. Sharding: one instance per node set, `--shard NODE` (see
benchmarks/bench_telemetry.py, "Sharding"); all instances of one shard would split a GPU's samples.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import os
from pathlib import Path

import msgspec

from services.telemetry.capture_bus import setup_capture
from services.telemetry.outbox import Outbox
from services.telemetry.pipeline import Pipeline
from services.telemetry.profile_endpoint import handler as profile_handler
from services.telemetry.records import RawSample, SamplerUnavailable
from services.telemetry.sampling import open_sampler, sample_loop
from services.telemetry.wire import sample_message
from shared.messages import DeviceSample, LaunchBatch
from shared.service import ServiceRuntime
from shared.subjects import CAPTURED_DIR, KERNEL_PROFILE, sample_subject, token
from shared.toolclient import BusToolClient


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--period", type=float, default=15.0, help="seconds between device samples (demo: 1)")
    p.add_argument("--sampler", choices=("auto", "nvml", "dcgm", "none"), default="auto",
                   help="auto: dcgm-exporter if --dcgm is given, else NVML if a GPU is present, else none")
    p.add_argument("--dcgm", default="", metavar="URL", help="dcgm-exporter /metrics URL to scrape")
    p.add_argument("--node", default="", help="node name on samples (default: hostname; DCGM: its label)")
    p.add_argument("--shard", default="*", metavar="NODE",
                   help="consume only this node's samples and launches (default: all nodes)")


async def setup(runtime: ServiceRuntime) -> None:
    a = runtime.args
    period, shard = getattr(a, "period", 15.0), getattr(a, "shard", "*")
    shard = shard if shard == "*" else token(shard)
    pipe, outbox = Pipeline(period, source=runtime.name), Outbox(runtime.bus)
    runtime.spawn(outbox.run(), "telemetry-outbox")
    node = getattr(a, "node", "")
    try:
        sampler, how = open_sampler(getattr(a, "sampler", "auto"), node, getattr(a, "dcgm", ""))
    except SamplerUnavailable as e:  # --sampler nvml asked for a GPU that is not there
        raise SystemExit(f"telemetry: {e}") from None
    runtime.details.update(role="telemetry", sampler=how, period_s=f"{period:g}", shard=shard)

    # The live capture path (capture_bus.py): captured tasks are stored where the toolrunner may read them.
    state = Path(os.environ.get("KPILOT_STATE", ".kpilot")).resolve()
    await setup_capture(runtime, state / CAPTURED_DIR)

    async def on_sample(msg: DeviceSample) -> None:
        for subject, out in pipe.on_sample(msg):
            await outbox.put(subject, out)

    async def on_launches(batch: LaunchBatch) -> None:
        pipe.add_launches(batch)

    # nats-py's fetch, once its long poll got a first message, waits for a full batch until the fetch
    # timeout: with the default 1 s that put up to 1 s on the event latency (bench --nats); 50 ms caps it.
    durable, fast = ("all" if shard == "*" else shard), {"new_only": True, "fetch_timeout_s": 0.05}
    await runtime.bus.consume(f"telemetry.launches.{shard}", f"telemetry-launches-{durable}", on_launches,
                              LaunchBatch, **fast)
    await runtime.bus.consume(f"telemetry.samples.{shard}.>", f"telemetry-samples-{durable}", on_sample,
                              DeviceSample, **fast)

    async def emit(s: RawSample) -> None:
        origin = how.split(":")[0]
        await outbox.put(sample_subject(s.node, s.gpu),
                         sample_message(s, source=runtime.name, origin=origin, period_s=period))

    def on_error(err: str) -> None:
        runtime.details["sampler_error"] = err

    async def report() -> None:  # counters for `kpilot status`, refreshed off the hot path
        for tick in itertools.count():
            counts = {**msgspec.structs.asdict(pipe.stats), **msgspec.structs.asdict(outbox.stats)}
            runtime.details["counts"] = " ".join(f"{k}={v}" for k, v in counts.items())
            if tick % 5 == 0:
                # The encoders' ring buffers are long-lived: with 10,000 GPUs' state, full collections
                # grew to 0.4 s pauses (bench --nats); frozen objects are no longer scanned.
                gc.freeze()
            await asyncio.sleep(2.0)

    runtime.spawn(report(), "telemetry-report")
    await runtime.add_endpoint("profile", KERNEL_PROFILE, profile_handler(
        BusToolClient(runtime.bus), runtime.bus.publish, source=runtime.name))
    if sampler is not None:
        runtime.spawn(sample_loop(sampler, period, emit, on_error), "telemetry-sampler")
