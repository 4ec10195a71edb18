"""The main job end to end, as `make run` runs it on a machine without a GPU: a real nats-server and the
six services as processes (`kpilot up`), the recorded H200 trace replayed into telemetry, and a proposed
patch (correct, speed not measured: no GPU here) whose evidence chain walks back to the telemetry sample;
nothing on `patches.verified.*`. Every causation id on the streams resolves."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from services.decomposer.patterns import PATTERNS
from shared.natsserver import free_port

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.mark.slow
def test_trace_to_proposed_patch_and_nothing_verified(tmp_path: Path) -> None:
    port, state = free_port(), str(tmp_path / "state")
    url = f"nats://127.0.0.1:{port}"
    up = _run("services.kpilot", "up", "--detach", "--port", str(port), "--state-dir", state, timeout=200)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        demo = _run("services.kpilot.demo", "--nats", url, "--timeout", "600", timeout=900)
        out = demo.stdout
        assert demo.returncode == 0, out + demo.stderr
        assert "event tc_underutilization start" in out and "PROPOSED patches.proposed.matmul_kernel" in out
        assert "VERIFIED" not in out and "is PROPOSED, not verified: speedup not measured: no GPU" in out
        subjects = ("telemetry.>", "events.>", "optimize.request", "jobs.>", "candidates.>", "verdicts.>",
                    "patches.>")
        tail = _run("services.kpilot", "tail", *subjects, "--json", "--since", "1h", "--timeout", "15",
                    "--nats", url, timeout=90)
        msgs = [json.loads(line) for line in tail.stdout.splitlines()]
        funnel = json.loads(_run("services.kpilot", "funnel", "--json", "--nats", url, timeout=60).stdout)
    finally:
        _run("services.kpilot", "down", "--port", str(port), "--state-dir", state, timeout=60)
    by_id = {m["data"]["id"]: m["data"] for m in msgs if isinstance(m["data"], dict) and "id" in m["data"]}
    patches = [m["data"] for m in msgs if m["subject"].startswith("patches.proposed.")]
    assert patches, "no proposed patch on the stream"
    # The demo printed the proposed patch, so the critic had decided: nothing verified was published.
    assert not [m for m in msgs if m["subject"].startswith("patches.verified.")]
    assert patches[0]["kind"] == "proposed_patch" and "no GPU" in patches[0]["not_verified"]
    patch = patches[0]
    # the change is a config edit or a source transformation (the rules policy proposes both)
    added = [ln for ln in patch["diff"].splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert patch["diff"].startswith("--- ") and added, patch["diff"]
    assert patch["speedup"]["value"] is None and "no GPU" in patch["speedup"]["not_measured"]
    steps = [link["step"] for link in patch["evidence_chain"]]
    for step in ("telemetry_sample", "state_vector", "trigger", "change", "verdict:static", "verdict:micro"):
        assert step in steps, steps
    # the diagnosis: the change's rationale names the decomposer finding it answers (wgmma_not_used for a
    # config that brings wgmma, k_loop_not_pipelined for k_pipeline, ...)
    names = {p.id for p in PATTERNS}
    diagnosis = [link["summary"] for link in patch["evidence_chain"] if link["step"] == "diagnosis"]
    assert any(n in summary for summary in diagnosis for n in names), patch["evidence_chain"]
    layers = {c["layer"]: c for c in funnel["overall"]["layers"]}
    overall = funnel["overall"]
    assert overall["candidates"] >= 1 and layers["static"]["reached"] == overall["candidates"]
    assert layers["full"]["skipped"] >= 1 and overall["gpu_seconds"] == 0.0  # no GPU here
    # Walk the patch's causation ids back to a telemetry sample: every id resolves on the streams.
    msg, seen = patch, []
    while msg.get("causation_id"):
        seen.append(msg["kind"])
        assert msg["causation_id"] in by_id, f"{msg['kind']} {msg['id']}: cause {msg['causation_id']} missing"
        msg = by_id[msg["causation_id"]]
    assert msg["kind"] == "device_sample", seen
    for m in by_id.values():  # and so does every other message's
        if m.get("causation_id") and m["kind"] not in ("heartbeat_ack", "tool_result", "audit"):
            assert m["causation_id"] in by_id, f"{m['kind']} {m['id']}: cause {m['causation_id']} missing"
