"""Timing statistics: quantiles as Triton computes them, CV, bootstrap CI of a speedup, sizing rules."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from triton.testing import _quantile

from services.toolrunner.timing_stats import (
    CAPPING_MASK,
    bootstrap_ratio_ci,
    calls_per_graph,
    cv,
    drop_capped,
    estimate_from_calls,
    quantile,
    reason_names,
    reps_for_budget,
    rounds_per_chunk,
    summarize,
    use_graph,
)

BENCH = Path(__file__).resolve().parents[1] / "fixtures" / "h200-probe" / "bench.json"
H200 = Path(__file__).resolve().parents[1] / "fixtures" / "h200"


def test_quantiles_match_triton_and_numpy() -> None:
    rng = np.random.default_rng(1)
    for n in (1, 2, 7, 100):
        x = list(rng.lognormal(0, 0.1, n))
        for q in (0.0, 0.2, 0.5, 0.8, 1.0):
            assert quantile(x, q) == pytest.approx(_quantile(x, [q])[0])
            assert quantile(x, q) == pytest.approx(float(np.quantile(x, q)))


def test_summary_fields() -> None:
    s = summarize([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (s.n, s.median_ms, s.p20_ms, s.p80_ms, s.mean_ms, s.min_ms, s.max_ms) == (5, 3, 1.8, 4.2, 3, 1, 5)
    assert s.cv == pytest.approx(np.std([1, 2, 3, 4, 5], ddof=1) / 3)
    assert cv([2.0]) == 0.0
    with pytest.raises(ValueError):
        summarize([])


def test_bootstrap_ci_contains_the_true_ratio_and_separates_real_gains() -> None:
    # Real H200 medians (bench.json): softmax w16 vs torch.softmax is ~1.60x; noise 1 % CV around each.
    fx = json.loads(BENCH.read_text())
    rng = np.random.default_rng(0)
    a = list(fx["torch_softmax_ms"] * rng.normal(1, 0.01, 200))
    b = list(fx["softmax_w16_ms"] * rng.normal(1, 0.01, 200))
    ratio, lo, hi = bootstrap_ratio_ci(a, b, n=2000, seed=0)
    true = fx["torch_softmax_ms"] / fx["softmax_w16_ms"]
    assert lo < ratio < hi and lo < true < hi
    assert lo > 1.5  # far outside the noise
    # Two add kernels within 1 % (B256 vs B1024): the interval must straddle 1 or sit very close to it.
    a2 = list(fx["add_B1024_ms"] * rng.normal(1, 0.01, 200))
    b2 = list(fx["add_B256_ms"] * rng.normal(1, 0.01, 200))
    _, lo2, hi2 = bootstrap_ratio_ci(a2, b2, seed=0)
    assert hi2 - lo2 < 0.01 and lo2 < 1.02


def test_bootstrap_is_deterministic_per_seed_and_rejects_tiny_n() -> None:
    a, b = [1.0, 1.1, 0.9, 1.05], [0.5, 0.55, 0.45, 0.5]
    assert bootstrap_ratio_ci(a, b, seed=3) == bootstrap_ratio_ci(a, b, seed=3)
    with pytest.raises(ValueError, match="at least 100"):
        bootstrap_ratio_ci(a, b, n=10)
    with pytest.raises(ValueError):
        bootstrap_ratio_ci([], b)


def test_do_bench_sizing_rules() -> None:
    assert reps_for_budget(100, 0.74) == 135  # the H200 add kernel: 0.74 ms -> 135 reps in 100 ms
    assert reps_for_budget(25, 1000) == 1 and reps_for_budget(100, 0) == 1000
    assert use_graph("auto", 0.005) and not use_graph("auto", 0.74)
    assert use_graph("on", 1.0) and not use_graph("off", 0.001)
    assert calls_per_graph(0.005) == 20 and calls_per_graph(1.0) == 1 and calls_per_graph(0) == 1000


def test_estimate_of_a_micro_call_picks_graph_replay() -> None:
    # bench_vector_add_micro.json (H200): samples of 3.4-3.9 us with slow first calls (36 us, 12 us); the
    # old estimate (5 flush + call pairs in one event pair, the first flush ever inside it) said 1.0395 ms
    # and chose one call per sample. Its first 5 samples were taken as the estimate now takes its 5 calls
    # (flush, then the call in its own event pair); their median is under the 10 us graph threshold.
    rec = json.loads((H200 / "bench_vector_add_micro.json").read_text())
    assert rec["method"]["estimate_ms"] > 1.0 and not rec["method"]["cuda_graph"]  # what went wrong
    first5 = rec["samples_ms"][:5]
    assert max(first5) > 0.030  # the slow first call the median must not follow
    est = estimate_from_calls(first5)
    assert 0.003 < est < 0.006 and use_graph("auto", est) and calls_per_graph(est) > 1
    assert not use_graph("auto", rec["method"]["estimate_ms"])
    assert estimate_from_calls([]) == 0.0


def test_chunks_hold_about_ten_ms_of_gpu_work() -> None:
    # The 0.74 ms add with a ~0.07 ms flush: 12 rounds per chunk; a 2-sided A/B of it: 6.
    assert rounds_per_chunk(0.81, 135) == 12 and rounds_per_chunk(2 * 0.81, 135) == 6
    assert rounds_per_chunk(50.0, 3) == 1  # a call longer than a chunk: one round each
    assert rounds_per_chunk(0.001, 40) == 40 and rounds_per_chunk(0.0, 7) == 7
    with pytest.raises(ValueError):
        rounds_per_chunk(1.0, 0)


def test_capped_samples_are_dropped_unless_too_few_remain() -> None:
    samples = [1.0] * 20 + [1.3] * 5
    masks = [0] * 20 + [0x4] * 5  # sw_power_cap on the slow ones
    kept, dropped, all_kept = drop_capped(samples, masks)
    assert kept == [1.0] * 20 and dropped == 5 and not all_kept
    kept, dropped, all_kept = drop_capped([1.0] * 20, [0x40] * 20)  # all thermally capped
    assert len(kept) == 20 and dropped == 0 and all_kept
    assert drop_capped([1.0, 2.0], [None, 0x1]) == ([1.0, 2.0], 0, False)  # idle is not capping
    with pytest.raises(ValueError):
        drop_capped([1.0], [])


def test_reason_names() -> None:
    assert reason_names(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert reason_names(0) == []
    assert CAPPING_MASK & 0x1 == 0  # gpu_idle is not capping
