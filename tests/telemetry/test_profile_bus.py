"""`profile.kernel` on a real nats-server, with the telemetry and toolrunner services' own setups.

On this CPU machine the toolrunner serves no ncu_profile: the reply is the `unavailable` ToolResult and
nothing is published. REPLAYED RECORD: `test_published_vector_from_a_recorded_h200_answer` puts the real
H200 record tests/fixtures/h200/ncu_profile_matmul.json behind `tools.ncu_profile` (a responder with the
toolrunner's credentials answering what the H200 runner answered) to test the publish path; the GPU test
at the end runs the whole path on a GPU and saves its vector to $KPILOT_FIXTURE_OUT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from services.telemetry.ncu_state import NCU_DIMENSIONS
from services.telemetry.profile_endpoint import TOOL, ProfileReply
from services.telemetry.service import setup as telemetry_setup
from services.toolrunner.nvtools import gpu_count
from services.toolrunner.service import LIST_SUBJECT
from services.toolrunner.service import setup as toolrunner_setup
from shared.bus import Bus
from shared.messages import StateVector, ToolRequest, ToolResult, decode, encode
from shared.natsserver import EmbeddedServer
from shared.service import ServiceRuntime
from shared.subjects import KERNEL_PROFILE
from tests.conftest import BusFactory

ROOT = Path(__file__).resolve().parents[2]
VECTOR_ADD = str(ROOT / "examples" / "vector_add.py")
H200 = ROOT / "tests" / "fixtures" / "h200"


async def _start(name: str, bus: Bus, setup: Any, **args: Any) -> ServiceRuntime:
    runtime = ServiceRuntime(name, bus)
    runtime.args = argparse.Namespace(**args)
    await runtime.start()
    await setup(runtime)
    runtime.ready = True
    return runtime


@pytest.fixture
async def services(nats_server: EmbeddedServer, make_bus: BusFactory, tmp_path: Path,
                   monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    monkeypatch.chdir(tmp_path)  # the runner keeps its artifacts under ./.kpilot
    runtimes = [
        await _start("toolrunner", await make_bus("toolrunner"), toolrunner_setup),
        await _start("telemetry", await make_bus("telemetry"), telemetry_setup, period=1.0, sampler="none",
                     dcgm="", node="", shard="*"),
    ]
    yield
    for r in runtimes:
        r.stop()
        if r.micro is not None:
            await r.micro.stop()


async def _ask(bus: Bus, args: dict[str, Any]) -> StateVector | ToolResult:
    req = ToolRequest(source="test", tool=TOOL, args=args, job_id="job-1")
    return await bus.request(KERNEL_PROFILE, req, ProfileReply, timeout_s=600)  # type: ignore[arg-type]


async def _kernel_messages(bus: Bus) -> int:
    info = await bus.js.stream_info("TELEMETRY", subjects_filter="telemetry.kernel.>")
    return sum((info.state.subjects or {}).values())


async def test_on_cpu_the_reply_is_unavailable_and_nothing_is_published(
    services: None, make_bus: BusFactory
) -> None:
    op = await make_bus("operator")
    seen: list[str] = []

    async def on_msg(raw: Any) -> None:
        seen.append(raw.subject)

    await op.nc.subscribe("telemetry.>", cb=on_msg)
    listing = json.loads((await op.nc.request(LIST_SUBJECT, b"", timeout=30)).data)
    assert "ncu_profile" not in {t["name"] for t in listing}  # this runner has no GPU

    res = await _ask(op, {"task_path": VECTOR_ADD, "kernel": "add_kernel"})
    assert isinstance(res, ToolResult) and not res.ok and res.error is not None
    assert res.error.code == "unavailable" and "ncu_profile needs a GPU" in res.error.message
    assert res.result is None and res.job_id == "job-1"

    bad = await _ask(op, {"task": VECTOR_ADD})
    assert isinstance(bad, ToolResult) and bad.error is not None and bad.error.code == "invalid_request"
    assert "task_path" in bad.error.message and "Fix:" in bad.error.message

    await asyncio.sleep(0.5)
    assert seen == [] and await _kernel_messages(op) == 0


def _kpilot(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.kpilot", "profile", *args, "--nats", url],
                          check=False, cwd=ROOT, capture_output=True, text=True, timeout=120)


async def test_kpilot_profile_says_unavailable(services: None, nats_server: EmbeddedServer) -> None:
    url = f"nats://127.0.0.1:{nats_server.port}"
    res = await asyncio.to_thread(_kpilot, url, VECTOR_ADD, "--kernel", "add_kernel", "--json")
    assert res.returncode == 1 and res.stdout == ""
    assert "kpilot profile: unavailable:" in res.stderr and "ncu_profile needs a GPU" in res.stderr
    missing = await asyncio.to_thread(_kpilot, url, "no_such_task.py")
    assert missing.returncode == 2 and "no such task file" in missing.stderr


async def test_published_vector_from_a_recorded_h200_answer(services: None, make_bus: BusFactory) -> None:
    record = json.loads((H200 / "ncu_profile_matmul.json").read_text())
    runner = await make_bus("toolrunner")
    asked: list[dict[str, Any]] = []

    async def replay(raw: Any) -> None:  # answers what the H200 runner answered for examples/matmul.py
        req = decode(raw.data, ToolRequest)
        asked.append(req.args)
        await raw.respond(encode(ToolResult(source="toolrunner", tool=TOOL, tool_version="1", ok=True,
                                            result=record, runner="h200host-4242", **req.caused())))

    await runner.nc.subscribe("tools.ncu_profile", queue="toolrunner-gpu", cb=replay)
    op = await make_bus("operator")
    got: list[StateVector] = []

    async def on_vector(v: StateVector) -> None:
        got.append(v)

    await op.consume("telemetry.kernel.>", "test-kernel", on_vector, StateVector)
    req = ToolRequest(source="test", tool=TOOL, job_id="job-2",
                      args={"task_path": str(ROOT / "examples/matmul.py"), "shape": "full", "gpu": "GPU-x"})
    v = await op.request(KERNEL_PROFILE, req, ProfileReply, timeout_s=60)  # type: ignore[arg-type]
    assert isinstance(v, StateVector), v
    assert asked == [{"task_path": str(ROOT / "examples/matmul.py"), "kernel": "", "shape": "full",
                      "config": {}, "gpu": 0}]
    assert (v.node, v.gpu, v.gpu_name, v.job_id, v.causation_id) == ("h200host", "GPU-x", "NVIDIA H200",
                                                                     "job-2", req.id)
    assert len(v.triples) == 40 and [a.resource for a in v.absent] == ["nvlink_bw"]
    for _ in range(50):
        if got:
            break
        await asyncio.sleep(0.1)
    assert got == [v]  # stored in TELEMETRY on telemetry.kernel.h200host.matmul_kernel
    assert await _kernel_messages(op) == 1
    info = await op.js.stream_info("TELEMETRY", subjects_filter="telemetry.kernel.>")
    assert info.state.subjects == {"telemetry.kernel.h200host.matmul_kernel": 1}


@pytest.mark.gpu
@pytest.mark.skipif(gpu_count() == 0, reason="needs a CUDA GPU")
async def test_profile_on_a_gpu(services: None, make_bus: BusFactory) -> None:
    v = await _ask(await make_bus("operator"), {"task_path": VECTOR_ADD, "kernel": "add_kernel"})
    assert isinstance(v, StateVector), v
    if out := os.environ.get("KPILOT_FIXTURE_OUT"):
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "kernel_vector_vector_add.json").write_bytes(msgspec.json.format(encode(v)))
    assert {t.space for t in v.triples} == {"kernel:add_kernel"}
    assert {t.resource for t in v.triples} | {a.resource for a in v.absent} >= set(NCU_DIMENSIONS)
    assert all(t.source.startswith("ncu:") for t in v.triples)
