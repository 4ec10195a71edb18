"""Statistics of timing samples: median, percentiles, CV, a bootstrap CI of a speedup, and the sizing rules
of Triton's do_bench. Pure (numpy only), tested on CPU.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from shared.nvml_clocks import CAPPING_MASK, CLOCK_EVENT_BITS
from shared.tools.bench import TimingStats

# do_bench_cudagraph is worth its capture cost below ~10 us per call, where host launch overhead
# (~5-20 us for a Python-level Triton launch) is the same size as the kernel (GPU.md "Timing method").
GRAPH_THRESHOLD_MS = 0.010
# A graph sample should last long enough that event resolution (~0.5 us) is < 1 % of it.
GRAPH_SAMPLE_MS = 0.1
# GPU time of the samples enqueued between two host waits. The host enqueues the next chunk while this one
# runs (a round costs it ~30-60 us of Python), so ~10 ms keeps it far ahead and the GPU never waits for a
# launch inside an event pair; NVML is read once per chunk, i.e. every ~10 ms of GPU time.
CHUNK_MS = 10.0


def quantile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile, the same rule as triton.testing._quantile (and numpy's default)."""
    if not samples:
        raise ValueError("no samples")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} outside [0, 1]")
    a = sorted(samples)
    point = q * (len(a) - 1)
    lo, hi = math.floor(point), math.ceil(point)
    t = point - lo
    return (1 - t) * a[lo] + t * a[hi]


def cv(samples: Sequence[float]) -> float:
    """Coefficient of variation: sample standard deviation (ddof=1) over the mean; 0 for one sample."""
    if len(samples) < 2:
        return 0.0
    mean = sum(samples) / len(samples)
    var = sum((x - mean) ** 2 for x in samples) / (len(samples) - 1)
    return math.sqrt(var) / mean if mean else math.inf


def summarize(samples: Sequence[float]) -> TimingStats:
    if not samples:
        raise ValueError("no samples to summarize")
    return TimingStats(
        n=len(samples),
        median_ms=quantile(samples, 0.5),
        p20_ms=quantile(samples, 0.2),
        p80_ms=quantile(samples, 0.8),
        mean_ms=sum(samples) / len(samples),
        min_ms=float(min(samples)),
        max_ms=float(max(samples)),
        cv=cv(samples),
    )


def bootstrap_ratio_ci(
    a: Sequence[float], b: Sequence[float], *, n: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """median(a) / median(b) and its percentile-bootstrap interval, each side resampled independently."""
    if not a or not b:
        raise ValueError("both sides need samples")
    if n < 100:
        raise ValueError(f"n_bootstrap={n}: use at least 100 resamples (2000 is the default)")
    rng = np.random.default_rng(seed)
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ma = np.median(xa[rng.integers(0, len(xa), size=(n, len(xa)))], axis=1)
    mb = np.median(xb[rng.integers(0, len(xb), size=(n, len(xb)))], axis=1)
    ratios = ma / mb
    alpha = (1.0 - level) / 2
    lo, hi = np.quantile(ratios, [alpha, 1 - alpha])
    return float(np.median(xa) / np.median(xb)), float(lo), float(hi)


def reps_for_budget(budget_ms: float, estimate_ms: float) -> int:
    """do_bench's rule: max(1, int(budget / estimate)); a zero estimate (sub-resolution) gets 1000."""
    if estimate_ms <= 0:
        return 1000
    return max(1, int(budget_ms / estimate_ms))


def use_graph(mode: str, estimate_ms: float) -> bool:
    if mode == "on":
        return True
    if mode == "off":
        return False
    return estimate_ms < GRAPH_THRESHOLD_MS


def estimate_from_calls(call_ms: Sequence[float]) -> float:
    """One call's time from a few flushed calls each between its own event pair: their median, so one slow
    first call (lazy module loading, a cold TLB) does not size the whole run. 0 when none was measured."""
    return quantile(call_ms, 0.5) if call_ms else 0.0


def rounds_per_chunk(round_ms: float, n_reps: int, chunk_ms: float = CHUNK_MS) -> int:
    """Rounds enqueued per host wait so a chunk holds ~chunk_ms of GPU work (1 to n_reps)."""
    if n_reps < 1:
        raise ValueError(f"n_reps={n_reps}: need at least one round")
    if round_ms <= 0:
        return n_reps
    return max(1, min(n_reps, int(chunk_ms / round_ms)))


def calls_per_graph(estimate_ms: float) -> int:
    """Calls unrolled in one graph so a replay lasts >= GRAPH_SAMPLE_MS (at most 1000)."""
    if estimate_ms <= 0:
        return 1000
    return max(1, min(1000, math.ceil(GRAPH_SAMPLE_MS / estimate_ms)))


# Keep at least this many samples; fewer unthrottled ones means the whole run was capped, which is
# itself the result to report (throttled_kept) rather than a median of 2 samples.
MIN_KEPT = 10


def reason_names(mask: int) -> list[str]:
    """Names of the known set bits (shared/nvml_clocks.py); an unknown bit stays only in the mask."""
    return [name for bit, name in CLOCK_EVENT_BITS.items() if mask & bit]


def drop_capped(samples: Sequence[float], masks: Sequence[int | None]) -> tuple[list[float], int, bool]:
    """(kept samples, number dropped, whether all were kept because too few were unthrottled)."""
    if len(samples) != len(masks):
        raise ValueError(f"{len(samples)} samples but {len(masks)} clock masks")
    kept = [s for s, m in zip(samples, masks) if m is None or not m & CAPPING_MASK]
    if len(kept) < min(MIN_KEPT, len(samples)):
        return list(samples), 0, True
    return kept, len(samples) - len(kept), False
