from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_fleet_simulator_runs_and_each_scenario_raises_its_event(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_telemetry.py"),
            "--gpus",
            "8",
            "--minutes",
            "10",
            "--render",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    row = json.loads(out.read_text())
    assert row["vectors"] == 8 * 40 and row["scenario_misses"] == 0
    assert row["events_on_healthy_gpus"] == []
    kinds = row["events_by_scenario_kind_edge"]
    assert kinds["poor_gemm:tc_underutilization:start"] == 2
    assert kinds["low_bandwidth:bandwidth_low:start"] == 2
    assert kinds["power_cap:throttling:start"] == kinds["power_cap:throttling:clear"] == 4
    assert row["vectors_per_s"] > 0


def test_nats_path_delivers_every_vector_and_the_scenario_events(tmp_path: Path) -> None:
    out = tmp_path / "n.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_telemetry.py"), "--nats", "--gpus", "16",
         "--rounds", "16", "--wall-period", "0.25", "--out", str(out)],
        capture_output=True, text=True, timeout=180, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    row = json.loads(out.read_text())
    assert row["samples_published"] == row["vectors_received"] == 16 * 16
    kinds = row["events_by_scenario_kind_edge"]
    assert kinds["poor_gemm:tc_underutilization:start"] == 4
    assert kinds["low_bandwidth:bandwidth_low:start"] == 4
    assert kinds["power_cap:throttling:start"] == kinds["power_cap:throttling:clear"] == 4
    assert not any(k.startswith("healthy:") for k in kinds)
    assert 0 < row["event_latency_s"]["p50"] <= row["event_latency_s"]["p99"]
