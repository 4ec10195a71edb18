from __future__ import annotations

from pathlib import Path

import pytest

from services.telemetry.dcgm_scrape import parse_exposition
from services.telemetry.encoding import (
    RESOURCES,
    StateEncoder,
    classify_kernel,
    order_triples,
    render_compact,
    robust_z,
    slope_per_minute,
)
from shared.messages import KernelShare, StateVector

from .helpers import GEMM, sample

FIXTURE = Path(__file__).parent / "fixtures" / "dcgm_exporter_2xh200.prom"


def _axis(v: StateVector, resource: str) -> dict[str, float]:
    return {t.time: t.value for t in v.triples if t.resource == resource}


def test_first_sample_has_only_current() -> None:
    enc = StateEncoder(node="n0", gpu="GPU-0", period_s=15.0)
    v = enc.encode(sample(0.0, sm_active=50.0))
    assert _axis(v, "sm_active") == {"current": 50.0}


def test_deltas_use_the_reading_15s_and_60s_back() -> None:
    enc = StateEncoder(node="n0", gpu="GPU-0", period_s=15.0)
    for i, x in enumerate([10.0, 20.0, 30.0, 40.0]):
        v = enc.encode(sample(15.0 * i, sm_active=x))
    assert _axis(v, "sm_active") == {"current": 40.0, "delta_15s": 10.0}  # 45 s of history: no 1 m delta
    v = enc.encode(sample(60.3, sm_active=55.0))  # 0.3 s of jitter is within half a period
    ax = _axis(v, "sm_active")
    assert ax["delta_15s"] == 15.0 and ax["delta_1m"] == 45.0


def test_trend_needs_half_the_window_and_is_per_minute() -> None:
    enc = StateEncoder(node="n0", gpu="GPU-0", period_s=15.0)
    for i in range(10):  # 135 s of history: too short for a 5 minute trend
        v = enc.encode(sample(15.0 * i, power=300.0 + 3.0 * i))
    assert "trend_5m" not in _axis(v, "power")
    v = enc.encode(sample(150.0, power=330.0))
    ax = _axis(v, "power")
    assert ax["trend_5m"] == pytest.approx(12.0)  # 3 W per 15 s = 12 W/min
    (t,) = [t for t in v.triples if t.resource == "power" and t.time == "trend_5m"]
    assert t.unit == "W/min"


def test_anomaly_score_after_enough_history() -> None:
    enc = StateEncoder(node="n0", gpu="GPU-0", period_s=1.0)
    base = [50.0, 51.0, 49.0, 50.5, 49.5, 50.0, 51.0, 49.0]
    for i, x in enumerate(base[:-1]):
        v = enc.encode(sample(float(i), sm_active=x))
    assert "anomaly_score" not in _axis(v, "sm_active")  # 6 points of history < 8
    v = enc.encode(sample(7.0, sm_active=base[-1]))
    v = enc.encode(sample(8.0, sm_active=80.0))
    z = _axis(v, "sm_active")["anomaly_score"]
    assert z == pytest.approx(robust_z(80.0, base)) and z > 10


def test_robust_z_and_slope_helpers() -> None:
    assert robust_z(10.0, [10.0] * 9) == 0.0
    assert robust_z(11.0, [10.0] * 9) == pytest.approx(10.0)  # flat history: floor of 1 % of the median
    assert slope_per_minute([(0.0, 0.0), (30.0, 1.0), (60.0, 2.0)]) == pytest.approx(2.0)


def test_ring_buffers_are_bounded() -> None:
    enc = StateEncoder(node="n0", gpu="GPU-0", period_s=15.0)
    for i in range(500):
        enc.encode(sample(15.0 * i, sm_active=float(i % 7)))
    (s,) = enc.series.values()
    assert len(s.points) == enc.maxlen == 22  # 300 s / 15 s + 1 period + 1
    assert s.points[0][0] == 15.0 * (500 - 22)


def test_every_unmeasured_resource_is_absent_with_a_reason() -> None:
    g0 = parse_exposition(FIXTURE.read_text(), ts=0.0)[0]
    v = StateEncoder(node=g0.node, gpu=g0.gpu).encode(g0)
    measured = {t.resource for t in v.triples}
    absent = {a.resource: a.reason for a in v.absent}
    assert measured | set(absent) == set(RESOURCES)
    assert not measured & set(absent)
    assert absent["l2_bandwidth"].startswith("per-kernel only")
    assert "lts__t_bytes" in absent["l2_bandwidth"]
    g1 = parse_exposition(FIXTURE.read_text(), ts=0.0)[1]
    v1 = StateEncoder(node=g1.node, gpu=g1.gpu).encode(g1)
    assert (
        "blank value" in {a.resource: a.reason for a in v1.absent}["nvlink_bw"]
    )  # the sampler's reason wins


def test_out_of_order_and_wrong_gpu_are_refused() -> None:
    enc = StateEncoder(node="n0", gpu="GPU-0")
    enc.encode(sample(10.0, sm_active=1.0))
    with pytest.raises(ValueError, match="time order"):
        enc.encode(sample(5.0, sm_active=1.0))
    with pytest.raises(ValueError, match="encoder of GPU GPU-0"):
        enc.encode(sample(20.0, gpu="GPU-1", sm_active=1.0))
    with pytest.raises(ValueError, match="period_s"):
        StateEncoder(node="n0", gpu="GPU-0", period_s=0)


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("matmul_kernel", "gemm"),
        ("_attn_fwd", "attention"),
        ("flash_fwd_kernel", "attention"),
        ("softmax_naive", "reduction"),
        ("layer_norm_fwd", "reduction"),
        ("add_kernel", "elementwise"),
        ("transpose_naive", "elementwise"),
        ("mystery", "unknown"),
    ],
)
def test_classify_kernel(name: str, cls: str) -> None:
    assert classify_kernel(name) == cls


def test_ordering_follows_the_kernel_class() -> None:
    enc = StateEncoder(node="n0", gpu="GPU-0", period_s=15.0)
    enc.encode(sample(0.0, sm_active=90.0, tensor_core_util=10.0, dram_bandwidth=30.0, power=400.0))
    v = enc.encode(sample(15.0, sm_active=91.0, tensor_core_util=11.0, dram_bandwidth=31.0, power=401.0))
    gemm = order_triples(v.triples, "gemm")
    assert [(t.resource, t.time) for t in gemm[:3]] == [
        ("tensor_core_util", "current"),
        ("tensor_core_util", "delta_15s"),
        ("sm_active", "current"),
    ]
    assert order_triples(v.triples, "elementwise")[0].resource == "dram_bandwidth"
    assert sorted(gemm, key=id) == sorted(v.triples, key=id)  # a permutation, nothing dropped


def test_render_compact_golden() -> None:
    enc = StateEncoder(node="n0", gpu="GPU-0", period_s=15.0)
    enc.encode(sample(0.0, tensor_core_util=14.0, sm_active=93.0, sm_clock=1980.0))
    v = enc.encode(sample(15.0, tensor_core_util=11.4, sm_active=94.0, sm_clock=1980.0), GEMM)
    text = render_compact(v)
    lines = text.splitlines()
    assert lines[0] == "gpu NVIDIA H200 node n0 period 15s class gemm"
    assert lines[1] == "hot: matmul_kernel 80% 1000x 120us; add_kernel 20% 1000x 30us"
    assert lines[2] == "tensor_core_util 11.4% d15s=-2.6 <test>"
    assert lines[3] == "sm_active 94% d15s=1 <test>"
    assert lines[4] == "sm_clock 1980MHz d15s=0 <test>"
    # all per-kernel dimensions share one line, the ncu metric names stay in the vector
    assert lines[5] == (
        "absent l2_bandwidth,tc_occupancy,gmem_coalescing,warp_divergence,reg_pressure,"
        "shared_mem_util,l1_cache_hit,inst_issue_stall,l2_hit_rate: per-kernel only"
    )
    assert lines[6] == (
        "absent pcie_bw,nvlink_bw,dram_bandwidth,power,memory_used,occupancy,gpu_util: "
        "no sampler on this GPU reported it"
    )
    assert len(lines) == 7 and len(text) < 500


def test_render_compact_limits() -> None:
    enc = StateEncoder(node="n0", gpu="GPU-0")
    v = enc.encode(
        sample(0.0, sm_active=1.0, power=2.0, sm_clock=3.0), [KernelShare(f"k{i}", 0.1, 1) for i in range(5)]
    )
    text = render_compact(v, "unknown", max_resources=1, max_kernels=2)
    assert "k2" not in text and "(+2 more)" in text


def test_no_delta_across_a_sampling_gap() -> None:
    enc = StateEncoder(node="n0", gpu="GPU-0", period_s=15.0)
    enc.encode(sample(0.0, sm_active=10.0))
    v = enc.encode(sample(300.0, sm_active=90.0))  # 5 minutes without samples
    assert _axis(v, "sm_active") == {"current": 90.0}


def test_space_axis_keeps_groups_apart_global_first() -> None:
    from services.telemetry.records import RawMetric, RawSample

    def s(ts: float, a: float, b: float) -> RawSample:
        return RawSample(
            ts=ts,
            node="n0",
            gpu="GPU-0",
            metrics=[
                RawMetric(resource="sm_active", value=a, unit="pct", source="ncu:sm", space="sm_group:0-65"),
                RawMetric(resource="sm_active", value=b, unit="pct", source="ncu:sm"),
            ],
        )

    enc = StateEncoder(node="n0", gpu="GPU-0")
    enc.encode(s(0.0, 90.0, 50.0))
    v = enc.encode(s(15.0, 80.0, 45.0))
    ordered = order_triples(v.triples, "gemm")
    assert [(t.space, t.time, t.value) for t in ordered] == [
        ("global_avg", "current", 45.0),
        ("sm_group:0-65", "current", 80.0),
        ("global_avg", "delta_15s", -5.0),
        ("sm_group:0-65", "delta_15s", -10.0),
    ]
    assert "sm_active@sm_group:0-65 80% d15s=-10 <ncu:sm>" in render_compact(v).splitlines()
