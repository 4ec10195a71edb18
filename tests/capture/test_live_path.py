"""The live path end to end on a real nats-server: an unmodified Triton program runs under the workload SDK
(TRITON_INTERPRET=1, CPU), its kernel becomes hot, telemetry asks for a capture, the SDK captures it
in-process, telemetry stores and registers the task after the toolrunner's sandboxed loader accepted it,
and the planner opens the job on it. Bad captures are refused with the fix named and the path survives.

SYNTHETIC TEST INPUT: the DeviceSamples published here (power-cap clock reasons for 13 s) are stated by
the test to make the throttling detector fire; there is no GPU. The launch telemetry is real: the
program's interpreted launches, counted and wall-clock timed by the SDK.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from services.planner.service import setup as planner_setup
from services.telemetry.wire import sample_message
from services.toolrunner.service import setup as runner_setup
from shared.messages import (
    CapturedTaskSource,
    CaptureRegistered,
    CaptureRequest,
    JobUpdate,
    LaunchBatch,
    decode,
)
from shared.service import ServiceRuntime
from shared.subjects import captured_task_subject, sample_subject
from shared.toolclient import BusToolClient
from tests.conftest import BusFactory
from tests.telemetry.helpers import sample
from tests.telemetry.test_service_bus import start_service

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "capture" / "live_program.py"
KERNEL = "scale_kernel"


class Seen:
    """Messages seen on core subscriptions, with an event per predicate to wait on (no sleeps)."""

    def __init__(self) -> None:
        self.msgs: list[Any] = []
        self._waiters: list[tuple[Any, asyncio.Future[Any]]] = []

    async def on(self, raw: Any) -> None:
        try:
            msg = decode(raw.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        self.msgs.append(msg)
        for pred, fut in self._waiters:
            if not fut.done() and pred(msg):
                fut.set_result(msg)

    async def wait(self, pred: Any, timeout_s: float) -> Any:
        for m in self.msgs:
            if pred(m):
                return m
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiters.append((pred, fut))
        return await asyncio.wait_for(fut, timeout_s)


async def _runtime(name: str, make_bus: BusFactory) -> ServiceRuntime:
    runtime = ServiceRuntime(name, await make_bus(name))
    await runtime.start()
    return runtime


async def test_hot_kernel_is_captured_registered_and_its_job_opens(
    make_bus: BusFactory, nats_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _live_path("cpu", make_bus, nats_server, tmp_path, monkeypatch)


@pytest.mark.gpu
async def test_live_path_on_the_gpu(
    make_bus: BusFactory, nats_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same path compiled for the GPU: launches counted by Triton's launch hooks and timed by CUDA
    events, the capture at the JIT entry, correctness on the device (the samples are still synthetic)."""
    await _live_path("cuda", make_bus, nats_server, tmp_path, monkeypatch)


async def _live_path(device: str, make_bus: BusFactory, nats_server: Any, tmp_path: Path,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("KPILOT_STATE", str(state))
    monkeypatch.chdir(tmp_path)
    await runner_setup(await _runtime("toolrunner", make_bus))
    await start_service(make_bus)
    await planner_setup(ServiceRuntime("planner", await make_bus("planner")))
    op = await make_bus("operator")
    seen = Seen()
    for subject in ("telemetry.launches.>", "capture.>", "jobs.>"):
        await op.nc.subscribe(subject, cb=seen.on)

    # Bad captures first: junk bytes are dead-lettered, a wrong hash is refused with the reason; neither
    # stops the consumer that takes the good one below.
    await op.nc.publish(captured_task_subject("junk"), b"{not json")
    forged = CapturedTaskSource(source="t", kernel="forged_kernel", node="n0", request_id="r", sha256="0" * 64,
                                source_text="KERNELS = ()\n")
    await op.publish(captured_task_subject("forged_kernel"), forged)
    refused = await seen.wait(lambda m: isinstance(m, CaptureRegistered) and m.kernel == "forged_kernel", 30)
    assert "does not match" in refused.error and not refused.task_path

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"PYTHONPATH": str(ROOT)}
    env |= {"TRITON_INTERPRET": "1"} if device == "cpu" else {}
    cmd = [sys.executable, "-m", "services.kpilot.capture.live", "--nats", nats_server.url("operator"),
           "--node", "n0", "--interval", "0.5", "--sample-fraction", "1", "--", str(PROGRAM), "120", device]
    proc = await asyncio.create_subprocess_exec(*cmd, cwd=tmp_path, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    try:
        # The program's launches reach telemetry (timed: the SDK times interpreted launches by wall clock).
        await seen.wait(lambda m: isinstance(m, LaunchBatch)
                        and any(r.kernel == KERNEL and r.durations_us for r in m.records), 60)
        t0 = time.time() + 0.5
        for i in range(13):  # SYNTHETIC: power-capped clocks for 12 s, over the throttling detector's 10 s
            s = sample(t0 + i, reasons=["sw_power_cap"], gpu_util=99.0, sm_active=90.0, sm_clock=1500.0)
            await op.publish(sample_subject("n0", s.gpu), sample_message(s, source="test", period_s=1.0))

        req = await seen.wait(lambda m: isinstance(m, CaptureRequest) and m.kernel == KERNEL, 30)
        got = await seen.wait(lambda m: isinstance(m, CapturedTaskSource) and m.kernel == KERNEL, 60)
        assert got.error == "" and got.request_id == req.id and got.causation_id == req.id
        reg = await seen.wait(lambda m: isinstance(m, CaptureRegistered) and m.kernel == KERNEL, 60)
        assert reg.error == "", reg.error
        assert reg.task_path == str((state / "captured" / f"{got.sha256}.py").resolve())
        assert reg.event_id == req.event_id != ""
        opened = await seen.wait(lambda m: isinstance(m, JobUpdate) and m.kernel == KERNEL, 60)
        assert opened.task_path == reg.task_path
        assert f"job opened for {KERNEL} by {req.event_id}" in opened.note
        kv = await op.js.key_value("kernels")
        assert msgspec.json.decode((await kv.get(KERNEL)).value) == {"task_path": reg.task_path}
        manifest = msgspec.json.decode((await kv.get(f"task.{KERNEL}")).value)
        assert manifest["sha256"] == got.sha256 and manifest["kernels"][0]["name"] == KERNEL
        assert "def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK" in Path(reg.task_path).read_text()
        # The registered task runs: at a tuned block (4 programs -> 2: the grid follows BLOCK), the kernel
        # matches the captured reference (on CPU under the interpreter), through the toolrunner on the bus.
        res = await BusToolClient(op, timeout_s=120).call("run_correctness", {
            "task_path": reg.task_path, "config": {"BLOCK": 512}, "device": device, "shapes": ["micro"],
            "seeds": [0]})
        assert res.ok and res.result is not None and res.result["passed"], res
    finally:
        proc.terminate()
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
    dead = await op.js.get_last_msg("DLQ", f"dlq.{captured_task_subject('junk')}")
    assert b"invalid message" in dead.data, out
