"""GPU only (the H200): `make run` live. A real stack (`kpilot up`), the example workload running the
example kernels in their untuned CONFIGs under the launch SDK with this GPU's NVML samples, the telemetry
service's detectors firing on that real data, the planner optimising the hot kernel, and a verified patch
whose speedup was measured on this GPU and is > 1.

Bounded for a ~5 minute device window: the workload runs at most 60 s (stopped once its event fired), the
demo waits at most KPILOT_LIVE_TIMEOUT s (default 180) for the job. With $KPILOT_FIXTURE_OUT set, the demo's
output and every message on the streams are saved under $KPILOT_FIXTURE_OUT/live_main_job/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shared.natsserver import free_port

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.mark.gpu
@pytest.mark.slow
def test_live_workload_to_a_verified_patch_with_a_measured_speedup(tmp_path: Path) -> None:
    import torch

    assert torch.cuda.is_available(), "this test runs on a GPU machine (pytest -m gpu on the H200)"
    wait_s = float(os.environ.get("KPILOT_LIVE_TIMEOUT", "180"))
    port, state = free_port(), str(tmp_path / "state")
    url = f"nats://127.0.0.1:{port}"
    up = _run("services.kpilot", "up", "--detach", "--port", str(port), "--state-dir", state, timeout=200)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        demo = _run("services.kpilot.demo", "--live", "--live-s", "60", "--nats", url, "--timeout",
                    f"{wait_s:g}", timeout=wait_s + 200)
        tail = _run("services.kpilot", "tail", "events.>", "jobs.>", "candidates.>", "verdicts.>",
                    "patches.>", "--json", "--since", "1h", "--timeout", "15", "--nats", url, timeout=90)
    finally:
        _run("services.kpilot", "down", "--port", str(port), "--state-dir", state, timeout=60)
    msgs = [json.loads(line) for line in tail.stdout.splitlines() if line.strip()]
    fx = os.environ.get("KPILOT_FIXTURE_OUT")
    if fx:
        out = Path(fx) / "live_main_job"
        out.mkdir(parents=True, exist_ok=True)
        (out / "demo.txt").write_text(demo.stdout + "\n--- stderr ---\n" + demo.stderr)
        (out / "streams.jsonl").write_text(tail.stdout)
        logs = Path(state) / "logs"
        for log in logs.glob("*.log"):
            (out / log.name).write_text(log.read_text()[-200_000:])
    text = demo.stdout + demo.stderr
    assert "[demo] live workload:" in demo.stdout, text
    line = demo.stdout.split("[demo] live workload: ", 1)[1].splitlines()[0]
    assert line.startswith("{"), f"the workload failed: {line}\n{demo.stderr[-3000:]}"
    summary = json.loads(line)
    assert summary["launch_records"] > 0 and summary["samples_published"] > 0, summary
    events = [m["data"] for m in msgs if m["subject"].startswith("events.state.")]
    starts = [e for e in events if e["edge"] == "start" and e["hot_kernels"]]
    assert starts, f"no state event with hot kernels fired on the live data: {text[-3000:]}"
    patches = [m["data"] for m in msgs if m["subject"].startswith("patches.verified.")]
    measured = [p for p in patches if p["speedup"] and p["speedup"]["value"] is not None]
    assert measured, f"no verified patch with a measured speedup: {text[-3000:]}"
    best = max(measured, key=lambda p: p["speedup"]["value"])
    assert best["speedup"]["value"] > 1.0, best["speedup"]
    assert best["diff"].startswith("--- ") and "+CONFIG = " in best["diff"]
    steps = [link["step"] for link in best["evidence_chain"]]
    assert "telemetry_sample" in steps and "trigger" in steps, steps  # it started from the live telemetry
    assert demo.returncode == 0, text[-3000:]
