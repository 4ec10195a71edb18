"""The toolrunner served over a real nats-server: tools by name, validation errors, GPU tools
unavailable without a GPU, cached calls, audit records, and `kpilot tool` as a user runs it."""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from services.toolrunner.service import setup
from shared.bus import Bus
from shared.messages import AuditRecord
from shared.natsserver import EmbeddedServer
from shared.service import ServiceRuntime
from shared.toolclient import BusToolClient
from tests.conftest import BusFactory

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = {"num_warps": 4, "registers_per_thread": 32, "grid": [1024]}


@pytest.fixture
async def runner(nats_server: EmbeddedServer, tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ServiceRuntime]:
    monkeypatch.chdir(tmp_path)  # the runner keeps its artifacts under ./.kpilot
    bus = await Bus.connect(nats_server.url("toolrunner"), "toolrunner")
    runtime = ServiceRuntime("toolrunner", bus)
    await runtime.start()
    await setup(runtime)
    runtime.ready = True
    yield runtime
    runtime.stop()
    if runtime.micro is not None:
        await runtime.micro.stop()
    await bus.close()


async def test_tool_call_validation_and_unavailable(runner: ServiceRuntime, make_bus: BusFactory) -> None:
    client = BusToolClient(await make_bus("verifier"), timeout_s=60)
    ok = await client.call("launch_config", LAUNCH, job_id="j1", causation_id="c1")
    assert ok.ok, ok.error
    assert ok.result is not None and ok.result["grid_blocks"] == 1024 and ok.result["sm_count"] == 132
    assert (ok.job_id, ok.runner) == ("j1", runner.instance)

    bad = await client.call("launch_config", {"num_warps": "four", "grid": [1], "colour": 1})
    assert not bad.ok and bad.error is not None and bad.error.code == "invalid_request"
    text = "\n".join(bad.error.violations)
    assert "num_warps" in text and "registers_per_thread" in text and "colour" in text

    gpu = await client.call("bench", {"task_path": "x.py"})
    assert not gpu.ok and gpu.error is not None and gpu.error.code == "unavailable"
    assert "bench needs a GPU" in gpu.error.message


async def test_semantic_check_refuses_unknown_kernel(runner: ServiceRuntime, make_bus: BusFactory) -> None:
    client = BusToolClient(await make_bus("verifier"), timeout_s=120)
    res = await client.call("compile", {"task_path": str(ROOT / "examples/vector_add.py"), "kernel": "nope"})
    assert not res.ok and res.error is not None
    assert res.error.code == "refused" and "nope" in res.error.message and "add_kernel" in res.error.message


@pytest.mark.slow
async def test_compile_is_cached_and_audited(runner: ServiceRuntime, make_bus: BusFactory) -> None:
    client = BusToolClient(await make_bus("verifier"), timeout_s=300)
    args = {"task_path": str(ROOT / "examples/vector_add.py")}
    first = await client.call("compile", args)
    assert first.ok, first.error
    kinds = {a["kind"] for a in first.result["artifacts"]}  # type: ignore[index]
    assert {"ttgir", "ptx", "cubin"} <= kinds
    second = await client.call("compile", args)
    assert second.ok and second.cached and second.result == first.result
    audits: list[AuditRecord] = []
    op = await make_bus("operator")

    async def on_audit(a: AuditRecord) -> None:
        audits.append(a)

    await op.consume("audit.>", "test-audit", on_audit, AuditRecord)
    for _ in range(50):
        if len(audits) >= 2:
            break
        await asyncio.sleep(0.1)
    # each call's audit record follows its reply, so the two may land in either order
    assert sorted(a.outcome for a in audits) == ["ok", "ok (cached)"]
    assert all(a.action == "compile" and a.actor == "verifier" for a in audits)
    # Every artifact is in the JetStream object store under its sha256, bytes intact.
    store = await op.js.object_store("artifacts")
    for art in first.result["artifacts"]:  # type: ignore[index]
        got = await store.get(art["sha256"])
        assert hashlib.sha256(got.data).hexdigest() == art["sha256"] and len(got.data) == art["size"]


def _kpilot(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.kpilot", *args, "--nats", url], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


async def test_kpilot_tool_cli(runner: ServiceRuntime, nats_server: EmbeddedServer) -> None:
    url = f"nats://127.0.0.1:{nats_server.port}"
    ok = await asyncio.to_thread(_kpilot, url, "tool", "launch_config", "--args", json.dumps(LAUNCH))
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["device"] == "NVIDIA H200"
    bad = await asyncio.to_thread(_kpilot, url, "tool", "launch_config", "--args", '{"grid": "x"}')
    assert bad.returncode == 2
    assert "grid" in bad.stderr and "num_warps" in bad.stderr
    listing = await asyncio.to_thread(_kpilot, url, "tool", "--list", "--json")
    tools = {t["name"]: t for t in json.loads(listing.stdout)}
    assert {"compile", "ptxas_info", "sass", "launch_config", "run_correctness", "mem_access_profile",
            "bench", "bench_ab", "ncu_profile"} <= set(tools)  # every tool, GPU ones included
    assert tools["bench"]["runs_on"] == "gpu runner" and tools["bench"]["served_by"] == []  # no GPU here
    assert tools["compile"]["runs_on"] == "cpu or gpu runner" and len(tools["compile"]["served_by"]) == 1
    text = await asyncio.to_thread(_kpilot, url, "tool", "--list")
    assert any(line.startswith("bench ") and "no runner up serves it" in line for line in text.stdout.splitlines())
    unknown = await asyncio.to_thread(_kpilot, url, "tool", "nosuchtool")
    assert unknown.returncode == 2 and "unknown tool 'nosuchtool' (see kpilot tool --list)" in unknown.stderr
    gpu_only = await asyncio.to_thread(_kpilot, url, "tool", "bench", "--args", "{}")
    assert gpu_only.returncode == 1 and "unavailable" in gpu_only.stderr and "unknown" not in gpu_only.stderr
    status = await asyncio.to_thread(_kpilot, url, "status", "--json")
    runner = next(r for r in json.loads(status.stdout) if r["name"] == "toolrunner")
    assert runner["details"]["gpus"] == "0" and runner["details"]["gpu_model"] == "none"
    assert "compile" in runner["details"]["tools"].split(",")
    assert tools["compile"]["input_schema"]["$defs"]["CompileInput"]["required"] == ["task_path"]
