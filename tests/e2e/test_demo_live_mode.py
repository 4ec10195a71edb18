"""Which feed the main job's demo takes: live on a GPU, the recorded H200 trace otherwise; `--live` without
a GPU fails at once with the fix, before it touches NATS."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from services.kpilot.demo import NoGpu, choose_mode

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_is_live_exactly_when_there_is_a_gpu() -> None:
    assert choose_mode(live=False, replay=False, gpu=True) == "live"
    assert choose_mode(live=False, replay=False, gpu=False) == "replay"
    assert choose_mode(live=False, replay=True, gpu=True) == "replay"
    assert choose_mode(live=True, replay=False, gpu=True) == "live"
    with pytest.raises(NoGpu, match="no GPU: run without --live to replay the recorded H200 trace"):
        choose_mode(live=True, replay=False, gpu=False)
    with pytest.raises(ValueError, match="exclude each other"):
        choose_mode(live=True, replay=True, gpu=True)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
def test_live_without_a_gpu_names_the_fix_and_does_not_connect() -> None:
    # Port 1 has no NATS: reaching the bus would fail with "cannot reach NATS", not with the GPU message.
    r = subprocess.run([sys.executable, "-m", "services.kpilot.demo", "--live", "--nats", "nats://127.0.0.1:1"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "no GPU: run without --live to replay the recorded H200 trace" in r.stderr
    assert "NATS" not in r.stderr + r.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
def test_the_live_workload_itself_refuses_without_a_gpu() -> None:
    r = subprocess.run([sys.executable, "-m", "services.kpilot.live_workload", "--nats", "nats://127.0.0.1:1",
                        "--duration", "5"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2 and "no GPU" in r.stderr and "without --live" in r.stderr, r.stderr
