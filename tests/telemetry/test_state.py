from __future__ import annotations

from services.telemetry.records import LaunchRecord
from services.telemetry.state import StateManager

from .helpers import sample


def launches(t: float, gpu: str = "") -> list[LaunchRecord]:
    return [
        LaunchRecord(
            kernel="matmul_kernel", gpu=gpu, launches=100, t_first=t - 1, t_last=t, durations_us=[900.0]
        ),
        LaunchRecord(
            kernel="add_kernel", gpu=gpu, launches=100, t_first=t - 1, t_last=t, durations_us=[100.0]
        ),
    ]


def test_step_encodes_detects_and_links_events_to_vectors() -> None:
    mgr = StateManager(node="n0", period_s=15.0)
    got = []
    for i in range(4):
        t = 15.0 * i
        mgr.add_launches(launches(t - 0.5))
        got += mgr.step(
            [
                sample(t, tensor_core_util=9.0, sm_active=95.0, gpu_util=100.0),
                sample(t, gpu="GPU-1", tensor_core_util=80.0, sm_active=95.0, gpu_util=100.0),
            ]
        )
    vectors = [v for v, _ in got]
    assert [v.gpu for v in vectors] == ["GPU-0", "GPU-1"] * 4
    assert vectors[-1].kernels[0].kernel == "matmul_kernel"
    assert vectors[-1].kernels[0].share == 0.9  # 100 x 900 us of 100 x 1000 us
    events = [(v.gpu, e) for v, es in got for e in es]
    assert [(g, e.event, e.edge) for g, e in events] == [("GPU-0", "tc_underutilization", "start")]
    (pair,) = [(v, es[0]) for v, es in got if es]
    assert pair[1].causation_id == pair[0].id and pair[1].ts == 30.0


def test_launch_window_and_gpu_attribution() -> None:
    mgr = StateManager(node="n0", period_s=15.0)
    mgr.add_launches(launches(0.0, gpu="GPU-1"))
    ((v0, _), (v1, _)) = mgr.step([sample(1.0, sm_active=1.0), sample(1.0, gpu="GPU-1", sm_active=1.0)])
    assert v0.kernels == [] and [k.kernel for k in v1.kernels] == ["matmul_kernel", "add_kernel"]
    ((v1_late, _),) = mgr.step([sample(30.0, gpu="GPU-1", sm_active=1.0)])  # 30 s later: out of window
    assert v1_late.kernels == [] and mgr.launches == []
    assert mgr.step([]) == []
