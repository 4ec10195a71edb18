"""GPU only: the example workload `make run --live` drives, instrumented for telemetry.

Runs the example kernel tasks in their untuned CONFIG (examples/matmul.py's 32x32x32 tile, 4 warps,
1 stage: 89 of 784 TFLOP/s on the H200 per GPU.md; vector_add and row_softmax at their CONFIG) in a loop
for a bounded time, under the launch SDK (services/telemetry/sdk.py) whose LaunchPublisher sends launch
batches on `telemetry.launches.<node>`. It also samples this GPU through NVML + GPM every `--period`
seconds and publishes the DeviceSamples on `telemetry.samples.<node>.<gpu>`, the subject the telemetry
service's own sampler and `kpilot replay` use: the service's sampler runs at its 15 s default under
`kpilot up`, too coarse for a detector's 30 s minimum duration inside a one-minute workload. Everything
the detectors see is measured on this machine; nothing is replayed.

    python -m services.kpilot.live_workload --nats nats://127.0.0.1:4222 [--duration 60] [--period 1]

Stops after `--duration` s or on SIGTERM/SIGINT (the demo sends it once the trigger fired, so the
verifier's timings do not share the GPU with it), publishes what is left and prints one JSON summary line.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from nats.aio.msg import Msg

from shared.messages import StateChangeEvent

ROOT = Path(__file__).resolve().parents[2]
# The tasks and the shapes they run at: the matmul at 4096^3 as examples/traces/capture_trace.py recorded
# it (~1.5 ms a launch at 89 TFLOP/s, so it dominates the launch time share); the others at their "full"
# shape (256 MiB operands, beyond the 60 MB L2).
WORKLOAD: tuple[tuple[str, dict[str, int] | None], ...] = (
    ("examples/matmul.py", {"m": 4096, "n": 4096, "k": 4096}),
    ("examples/vector_add.py", None),
    ("examples/row_softmax.py", None),
)
MAX_DURATION_S = 600.0  # the demo's live phase is bounded; a longer run is a mistake, not a workload


class NoGpu(RuntimeError):
    """No CUDA GPU in this process; the message names the fix."""


def load_module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"kpilot_live_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import the task {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _launcher(mod: ModuleType, shape: dict[str, int] | None) -> Any:
    inputs = mod.make_inputs(shape or mod.SHAPES["full"], 0, "cuda")
    cfg = dict(mod.CONFIG)
    return lambda: mod.launch(inputs, **cfg)


def run(url: str, duration_s: float, period_s: float, stop: threading.Event) -> dict[str, Any]:
    import torch

    if not torch.cuda.is_available():
        raise NoGpu("no GPU: the live workload launches CUDA kernels; run the demo without --live to replay "
                    "the recorded H200 trace")
    from services.telemetry.nvml_sampler import NvmlSampler
    from services.telemetry.sdk import LaunchTelemetry
    from services.telemetry.sdk_publish import LaunchPublisher
    from services.telemetry.wire import sample_message
    from shared.bus import Bus
    from shared.subjects import sample_subject

    node = socket.gethostname()
    sampler = NvmlSampler(node=node, indices=[torch.cuda.current_device()])
    tel = LaunchTelemetry(sample_fraction=1 / 8, gpu=sampler.devices[0].uuid)  # capture_trace's 1 in 8
    mods = [(load_module(ROOT / p), shape) for p, shape in WORKLOAD]
    tel.instrument(*[k for m, _ in mods for k in m.KERNELS])
    work = [(m.__name__, _launcher(m, shape)) for m, shape in mods]
    for _, fn in work:  # compile before anything is recorded
        fn()
    torch.cuda.synchronize()
    tel.install()
    pub = LaunchPublisher(tel, url, node=node, source="live-workload").start()
    published: list[int] = [0]

    def sample_loop() -> None:  # a thread with its own loop: the launch loop below never waits on NATS
        async def go() -> None:
            bus = await Bus.connect(url, "live-workload")
            try:
                next_t = time.monotonic() + period_s
                while not stop.is_set():
                    await asyncio.sleep(max(0.0, next_t - time.monotonic()))
                    next_t += period_s
                    for s in await asyncio.to_thread(sampler.sample):
                        await bus.publish(sample_subject(s.node, s.gpu),
                                          sample_message(s, source="live-workload", origin="nvml",
                                                         period_s=period_s))
                        published[0] += 1
            finally:
                await bus.close()

        asyncio.run(go())

    thread = threading.Thread(target=sample_loop, name="live-sampler", daemon=True) if period_s > 0 else None
    if thread is not None:
        thread.start()
    gpu_uuid = sampler.devices[0].uuid  # close() below empties sampler.devices (H200 run 6 crashed here)
    t0, loops = time.monotonic(), 0
    try:
        while not stop.is_set() and time.monotonic() - t0 < duration_s:
            for _ in range(8):
                for _, fn in work:
                    fn()
            torch.cuda.synchronize()
            loops += 1
    finally:
        stop.set()
        if thread is not None:
            thread.join(timeout=10.0)
        pub.stop()
        tel.uninstall()
        sampler.close()
    return {"node": node, "gpu": gpu_uuid, "gpu_name": torch.cuda.get_device_name(),
            "seconds": round(time.monotonic() - t0, 1), "iterations": loops * 8,
            "kernels": [n for n, _ in work], "samples_published": published[0],
            "launch_batches": pub.stats.batches, "launch_records": pub.stats.records,
            "publish_failures": pub.stats.failures}


async def feed(url: str, kernels: set[str], live_s: float,
               on_event: Callable[[StateChangeEvent], None]) -> str:
    """The demo's live phase: run this module in a subprocess until a state event's hot kernels name one
    of `kernels` (or `live_s` passes), then stop it; every event goes to `on_event`. Its summary line."""
    from shared.bus import Bus
    from shared.messages import decode

    bus = await Bus.connect(url, "kpilot")
    hit = asyncio.Event()

    async def _event(raw: Msg) -> None:
        ev = decode(raw.data)
        if isinstance(ev, StateChangeEvent):
            on_event(ev)
            if ev.edge == "start" and {k.kernel for k in ev.hot_kernels} & kernels:
                hit.set()

    sub = await bus.nc.subscribe("events.state.>", cb=_event)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "services.kpilot.live_workload", "--nats", url,
        "--duration", f"{min(live_s, MAX_DURATION_S):g}", cwd=ROOT, stdout=asyncio.subprocess.PIPE)
    waits = {asyncio.ensure_future(proc.wait()), asyncio.ensure_future(hit.wait())}
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)  # it publishes its last batch and prints its summary
        out, _ = await proc.communicate()
        if not hit.is_set():
            await asyncio.sleep(3.0)  # the events of the last samples are still on their way
    finally:
        for w in waits:
            w.cancel()
        if proc.returncode is None:
            proc.kill()
        await sub.unsubscribe()
        await bus.close()
    lines = out.decode().strip().splitlines()
    return lines[-1] if lines else f"exited with {proc.returncode} and printed nothing (see its stderr above)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nats", default=os.environ.get("KPILOT_NATS", "nats://127.0.0.1:4222"))
    ap.add_argument("--duration", type=float, default=60.0, help="seconds to run (at most 600)")
    ap.add_argument("--period", type=float, default=1.0, help="NVML sample period, s (0: publish none)")
    args = ap.parse_args(argv)
    if not 0 < args.duration <= MAX_DURATION_S:
        ap.error(f"--duration is seconds in (0, {MAX_DURATION_S:g}], got {args.duration}")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        summary = run(args.nats, args.duration, args.period, stop)
    except NoGpu as e:
        print(f"live_workload: {e}", file=sys.stderr)
        return 2
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
