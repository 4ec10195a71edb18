from __future__ import annotations

import random

import pytest

from services.telemetry.detectors import (
    Anomaly,
    BandwidthLow,
    DetectorBank,
    Edge,
    Reading,
    TcUnderutilization,
    Thresholds,
    Throttling,
    l2_miss_spike,
    occupancy_drop,
)
from services.telemetry.records import RawSample
from shared.messages import KernelShare, StateChangeEvent, decode, encode

from .helpers import ADD, GEMM, sample

P = 15.0  # the default period


def run(
    bank: DetectorBank, samples: list[RawSample], kernels: list[KernelShare]
) -> list[tuple[float, str, str]]:
    out = []
    for s in samples:
        out += [(e.ts, e.event, e.edge) for e in bank.feed(s, kernels)]
    return out


def gemm_samples(tc: list[float], sm: float = 95.0) -> list[RawSample]:
    return [sample(P * i, tensor_core_util=x, sm_active=sm, gpu_util=100.0) for i, x in enumerate(tc)]


def tc_bank() -> DetectorBank:
    return DetectorBank("n0", "GPU-0", [TcUnderutilization()])


# ---------------------------------------------------------------- edges, hysteresis, durations


def test_tc_underutilization_starts_once_after_min_duration_and_clears_once() -> None:
    # low from t=0: pending at 0, 15, start at 30 (30 s held); stays low; recovers at 90, clear at 120.
    tc = [10, 12, 11, 10, 12, 11, 70, 72, 71, 70]
    events = run(tc_bank(), gemm_samples(tc), GEMM)
    assert events == [(30.0, "tc_underutilization", "start"), (120.0, "tc_underutilization", "clear")]


def test_shorter_than_min_duration_emits_nothing() -> None:
    assert run(tc_bank(), gemm_samples([10, 10, 70, 10, 10, 70, 10, 70]), GEMM) == []


def test_hysteresis_band_neither_starts_nor_clears() -> None:
    # 35 is between enter (30) and exit (40): it does not start a pending condition ...
    assert run(tc_bank(), gemm_samples([35] * 10), GEMM) == []
    # ... and, once active, it does not clear it; flapping 25/35 keeps exactly one start.
    tc = [10, 10, 10, 35, 25, 35, 25, 35, 38, 39, 35]
    assert run(tc_bank(), gemm_samples(tc), GEMM) == [(30.0, "tc_underutilization", "start")]


def test_clear_needs_min_clear_continuously() -> None:
    tc = [10, 10, 10, 50, 50, 20, 50, 50, 50]  # off at 45-60, back on at 75, off 90..120
    events = run(tc_bank(), gemm_samples(tc), GEMM)
    assert events == [(30.0, "tc_underutilization", "start"), (120.0, "tc_underutilization", "clear")]


def test_gates_kernel_class_and_busy_sms() -> None:
    assert run(tc_bank(), gemm_samples([10] * 6), ADD) == []  # memory-bound hot kernel: not this rule
    assert run(tc_bank(), gemm_samples([10] * 6, sm=20.0), GEMM) == []  # SMs idle: nothing to fix
    small = [KernelShare("matmul_kernel", 0.1, 10, 5.0)]
    assert run(tc_bank(), gemm_samples([10] * 6), small) == []  # not hot
    # an active condition clears when its precondition goes away (the GEMM stops being hot)
    bank = tc_bank()
    s = gemm_samples([10] * 8)
    ev = run(bank, s[:4], GEMM) + run(bank, s[4:], ADD)
    assert ev == [(30.0, "tc_underutilization", "start"), (90.0, "tc_underutilization", "clear")]


def test_unknown_holds_an_active_condition() -> None:
    bank = tc_bank()
    ev = run(bank, gemm_samples([10] * 4), GEMM)
    ev += run(bank, [sample(60.0 + P * i, sm_active=95.0) for i in range(10)], GEMM)  # tensor util absent
    assert ev == [(30.0, "tc_underutilization", "start")]
    assert bank.active == ["tc_underutilization"]


def test_kernel_class_override() -> None:
    bank = DetectorBank("n0", "GPU-0", [TcUnderutilization()], kernel_classes={"my_kernel": "gemm"})
    ks = [KernelShare("my_kernel", 1.0, 10, 5.0)]
    assert run(bank, gemm_samples([10] * 3), ks) == [(30.0, "tc_underutilization", "start")]


def test_bandwidth_low() -> None:
    bank = DetectorBank("n0", "GPU-0", [BandwidthLow()])
    bw = [20, 20, 20, 20, 55, 58, 75, 80, 85]
    samples = [sample(P * i, dram_bandwidth=x, gpu_util=100.0) for i, x in enumerate(bw)]
    assert run(bank, samples, ADD) == [(30.0, "bandwidth_low", "start"), (120.0, "bandwidth_low", "clear")]
    assert run(DetectorBank("n0", "GPU-0", [BandwidthLow()]), samples, GEMM) == []  # compute-bound hot kernel


def test_throttling() -> None:
    bank = DetectorBank("n0", "GPU-0", [Throttling()])
    reasons: list[list[str] | None] = [
        ["gpu_idle"],
        ["sw_power_cap"],
        ["sw_power_cap", "hw_slowdown"],
        None,
        ["sw_power_cap"],
        [],
        [],
        [],
        [],
    ]
    samples = [sample(P * i, reasons=r, sm_clock=1500.0) for i, r in enumerate(reasons)]
    # on at 15 (pending), 30 start (15 s >= 10 s); None at 45 holds; off from 75, clear at 105
    assert run(bank, samples, GEMM) == [(30.0, "throttling", "start"), (105.0, "throttling", "clear")]
    idle = [sample(P * i, reasons=["gpu_idle", "applications_clocks_setting"]) for i in range(5)]
    assert run(DetectorBank("n0", "GPU-0", [Throttling()]), idle, GEMM) == []


def test_occupancy_drop_uses_a_frozen_baseline() -> None:
    rule = occupancy_drop()
    bank = DetectorBank("n0", "GPU-0", [rule])
    occ = [60, 61, 59, 60, 60, 45, 44, 45, 45, 45, 45, 57, 58, 58, 58]
    samples = [sample(P * i, occupancy=x, sm_active=90.0) for i, x in enumerate(occ)]
    events = run(bank, samples, GEMM)
    assert events == [(105.0, "occupancy_drop", "start"), (195.0, "occupancy_drop", "clear")]
    # the drop did not leak into the baseline while pending/active
    assert rule.baseline.get("matmul_kernel") == pytest.approx(60.0, abs=1.0)


def test_occupancy_baseline_is_per_hot_kernel() -> None:
    bank = DetectorBank("n0", "GPU-0", [occupancy_drop()])
    a = [sample(P * i, occupancy=60.0, sm_active=90.0) for i in range(6)]
    b = [sample(P * (6 + i), occupancy=30.0, sm_active=90.0) for i in range(6)]
    assert run(bank, a, GEMM) + run(bank, b, ADD) == []  # another kernel, another level: no drop


def test_l2_miss_spike_and_absent_source() -> None:
    bank = DetectorBank("n0", "GPU-0", [l2_miss_spike()])
    hit = [80, 81, 80, 79, 80, 50, 50, 52, 51, 78, 79, 80, 80]
    samples = [sample(P * i, l2_hit_rate=x) for i, x in enumerate(hit)]
    assert run(bank, samples, GEMM) == [(105.0, "l2_miss_spike", "start"), (165.0, "l2_miss_spike", "clear")]
    quiet = [sample(P * i, sm_active=90.0) for i in range(20)]  # device-wide samplers have no L2 hit rate
    assert run(DetectorBank("n0", "GPU-0", [l2_miss_spike()]), quiet, GEMM) == []


def test_anomaly_fires_on_a_spike_and_learns_a_new_level() -> None:
    rng = random.Random(7)
    steady = [400.0 + rng.uniform(-4, 4) for _ in range(20)]
    bank = DetectorBank("n0", "GPU-0", [Anomaly()])
    values = steady + [650.0, 640.0, 400.0, 401.0, 399.0, 400.0]
    samples = [sample(P * i, power=x) for i, x in enumerate(values)]
    assert run(bank, samples, GEMM) == [(300.0, "anomaly", "start"), (360.0, "anomaly", "clear")]
    assert run(DetectorBank("n0", "GPU-0", [Anomaly()]), samples[:20], GEMM) == []  # noise alone: quiet


def test_anomaly_waits_for_warmup() -> None:
    bank = DetectorBank("n0", "GPU-0", [Anomaly()])
    samples = [sample(P * i, power=x) for i, x in enumerate([400.0] * 5 + [900.0])]
    assert run(bank, samples, GEMM) == []


# ---------------------------------------------------------------- events and invariants


def test_event_content_round_trips_on_the_wire() -> None:
    bank = tc_bank()
    events: list[StateChangeEvent] = []
    for s in gemm_samples([10, 11, 12]):
        events += bank.feed(s, GEMM, causation_id="01SAMPLE")
    (e,) = events
    assert (e.event, e.edge, e.node, e.gpu, e.ts) == ("tc_underutilization", "start", "n0", "GPU-0", 30.0)
    assert e.detector == "rule:tc_underutilization/v1" and e.causation_id == "01SAMPLE"
    assert e.detail.startswith("tc_underutilization start: value 12 < 30 for 30s; SMs 95% busy; hot gemm")
    assert {t.resource for t in e.triples} == {"tensor_core_util", "sm_active", "gpu_util"}
    assert [k.kernel for k in e.hot_kernels] == ["matmul_kernel", "add_kernel"]
    assert decode(encode(e)) == e


def test_random_streams_alternate_start_and_clear_per_rule() -> None:
    rng = random.Random(1)
    for trial in range(30):
        bank = DetectorBank("n0", "GPU-0")
        last: dict[str, str] = {}
        for i in range(120):
            s = sample(
                P * i,
                reasons=rng.choice([[], ["sw_power_cap"], None]),
                tensor_core_util=rng.uniform(0, 100),
                sm_active=rng.uniform(0, 100),
                gpu_util=rng.uniform(0, 100),
                dram_bandwidth=rng.uniform(0, 100),
                occupancy=rng.uniform(0, 100),
                l2_hit_rate=rng.uniform(0, 100),
                power=rng.uniform(100, 700),
            )
            for e in bank.feed(s, rng.choice([GEMM, ADD, []])):
                assert last.get(e.event, "clear") != e.edge, (trial, i, e.event, e.edge)
                last[e.event] = e.edge
        assert set(bank.active) == {k for k, v in last.items() if v == "start"}


def test_edge_with_zero_durations_follows_each_reading() -> None:
    e = Edge(Thresholds(enter=1.0, exit=2.0, direction="below", min_duration_s=0.0, min_clear_s=0.0))
    assert [e.step(float(t), Reading(v)) for t, v in enumerate([0.5, 0.5, 1.5, 3.0, 0.0])] == [
        "start",
        None,
        None,
        "clear",
        "start",
    ]


def test_threshold_validation() -> None:
    with pytest.raises(ValueError, match="exit >= enter"):
        Thresholds(enter=30, exit=20, direction="below")
    with pytest.raises(ValueError, match="exit <= enter"):
        Thresholds(enter=10, exit=20, direction="above")
    with pytest.raises(ValueError, match="unique"):
        DetectorBank("n0", "GPU-0", [Throttling(), Throttling()])
    with pytest.raises(ValueError, match="detectors of GPU GPU-0"):
        tc_bank().feed(sample(0.0, gpu="GPU-9"))
