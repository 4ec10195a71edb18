"""The (resource, time, space) state encoding.

Resource axis: the dimensions of shared.messages.Resource. Time axis, from a bounded ring buffer of past
readings per (resource, space, source):
  current        the latest reading;
  delta_15s      current minus the reading ~15 s earlier;
  delta_1m       current minus the reading ~60 s earlier;
  trend_5m       least-squares slope over the last 5 minutes, per minute;
  anomaly_score  signed robust z-score of current against the last 5 minutes: (x - median) / (1.4826 MAD).
A time coordinate whose history is too short is left out (never reported as 0). Space axis: "global_avg"
for device-wide readings, "sm_group:<a>-<b>" / "warp_group:<i>" where a source gives them (ncu).
A resource no source gives becomes an AbsentDimension with the reason.

Ordering (shared/kernel_classes.py, shared with the planner) puts the triples a planner of that kernel
class should read first at the top, and `render_compact` writes a vector in few tokens for a prompt.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import get_args

from services.telemetry.records import RawSample
from shared.kernel_classes import RESOURCES, KernelClass, classify_kernel, order_triples
from shared.messages import AbsentDimension, KernelShare, Resource, StateTriple, StateVector, TimeAxis

TIME_AXIS: tuple[TimeAxis, ...] = get_args(TimeAxis)

# Why a dimension is absent when the sampler says nothing about it (GPU.md, "Where each state dimension
# comes from"): NVML, GPM and DCGM are device-wide; these are per-kernel counters only ncu reads.
PER_KERNEL_ONLY: dict[Resource, str] = {
    "l2_bandwidth": "ncu lts__t_bytes.sum.per_second",
    "l2_hit_rate": "ncu lts__t_sector_hit_rate.pct",
    "gmem_coalescing": "ncu l1tex__t_sectors/requests_pipe_lsu_mem_global_op_ld",
    "warp_divergence": "ncu smsp__thread_inst_executed_per_inst_executed.ratio",
    "reg_pressure": "ncu launch__registers_per_thread / ptxas -v",
    "shared_mem_util": "ncu l1tex__data_bank_conflicts_pipe_lsu_mem_shared",
    "l1_cache_hit": "ncu l1tex__t_sector_hit_rate.pct",
    "inst_issue_stall": "ncu smsp__average_warp_latency_issue_stalled_*",
    "tc_occupancy": "ncu sm__pipe_tensor_op_hmma_cycles_active; the device-wide counter is tensor_core_util",
}


def default_absent_reason(resource: Resource) -> str:
    if resource in PER_KERNEL_ONLY:
        return f"per-kernel only (no device-wide source; {PER_KERNEL_ONLY[resource]})"
    return "no sampler on this GPU reported it"


# ---------------------------------------------------------------- ring buffers and the time axis

# Windows in seconds. The tolerance accepts a reading up to half a period late, so a 15 s period with
# jitter still finds "the reading 15 s ago".
DELTA_15S = 15.0
DELTA_1M = 60.0
TREND_WINDOW = 300.0
TREND_MIN_SPAN = 150.0  # a slope over less than half the window is mostly noise
ANOMALY_MIN_POINTS = 8  # a median/MAD of fewer points is not a baseline
MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution times this is its standard deviation


class Series:
    """A bounded ring buffer of (ts, value) readings of one (resource, space, source)."""

    def __init__(self, maxlen: int) -> None:
        self.points: deque[tuple[float, float]] = deque(maxlen=maxlen)

    def add(self, ts: float, value: float) -> None:
        if self.points and ts <= self.points[-1][0]:
            raise ValueError(f"readings must arrive in time order: {ts} after {self.points[-1][0]}")
        self.points.append((ts, value))

    def at_or_before(self, ts: float) -> tuple[float, float] | None:
        for p in reversed(self.points):
            if p[0] <= ts:
                return p
        return None

    def since(self, ts: float) -> list[tuple[float, float]]:
        return [p for p in self.points if p[0] >= ts]


def slope_per_minute(points: Sequence[tuple[float, float]]) -> float:
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    cov = sum((t - mt) * (v - mv) for t, v in points)
    return 60.0 * cov / var if var > 0 else 0.0


def robust_z(x: float, history: Sequence[float]) -> float:
    """(x - median) / (1.4826 MAD), with a scale floor of 1 % of |median| (or 1e-6) so that a flat
    history does not turn a tiny wobble into an infinite score."""
    med = median(history)
    mad = median(abs(v - med) for v in history)
    scale = max(MAD_TO_SIGMA * mad, 0.01 * abs(med), 1e-6)
    return (x - med) / scale


def time_axis(series: Series, ts: float, value: float, period_s: float) -> dict[TimeAxis, float]:
    """The time coordinates of the reading just added at `ts`; missing history -> key left out."""
    tol = 0.5 * period_s
    out: dict[TimeAxis, float] = {"current": value}
    for key, span in (("delta_15s", DELTA_15S), ("delta_1m", DELTA_1M)):
        prev = series.at_or_before(ts - span + tol)
        # after a gap in sampling the nearest older reading may be far older than `span`: then no delta
        if prev is not None and prev[0] < ts and ts - prev[0] <= span + 1.5 * period_s:
            out[key] = value - prev[1]  # type: ignore[index]
    window = series.since(ts - TREND_WINDOW)
    if len(window) >= 3 and window[-1][0] - window[0][0] >= TREND_MIN_SPAN:
        out["trend_5m"] = slope_per_minute(window)
    history = [v for t, v in window if t < ts]
    if len(history) >= ANOMALY_MIN_POINTS:
        out["anomaly_score"] = robust_z(value, history)
    return out


def _time_unit(axis: TimeAxis, unit: str) -> str:
    if axis == "trend_5m":
        return f"{unit}/min"
    if axis == "anomaly_score":
        return "robust_z"
    return unit


@dataclass
class StateEncoder:
    """Encodes one GPU's samples into StateVectors, keeping the history the time axis needs.

    The ring buffers hold `TREND_WINDOW` seconds plus a period of readings at `period_s` (at most 4096).
    """

    node: str
    gpu: str
    period_s: float = 15.0
    source: str = "telemetry"
    series: dict[tuple[str, str, str], Series] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.period_s <= 0:
            raise ValueError(f"period_s must be > 0 seconds, got {self.period_s}")
        self.maxlen = min(4096, math.ceil((TREND_WINDOW + self.period_s) / self.period_s) + 1)

    def encode(self, sample: RawSample, kernels: Sequence[KernelShare] = ()) -> StateVector:
        if sample.gpu != self.gpu:
            raise ValueError(f"sample of GPU {sample.gpu} given to the encoder of GPU {self.gpu}")
        triples: list[StateTriple] = []
        seen: set[str] = set()
        for m in sample.metrics:
            key = (m.resource, m.space, m.source)
            s = self.series.get(key)
            if s is None:
                s = self.series[key] = Series(self.maxlen)
            s.add(sample.ts, m.value)
            seen.add(m.resource)
            for axis, v in time_axis(s, sample.ts, m.value, self.period_s).items():
                triples.append(StateTriple(m.resource, axis, m.space, v, _time_unit(axis, m.unit), m.source))
        given = {a.resource: a.reason for a in sample.absent}
        absent = [
            AbsentDimension(r, given.get(r) or default_absent_reason(r)) for r in RESOURCES if r not in seen
        ]
        return StateVector(
            source=self.source,
            ts=sample.ts,
            node=sample.node,
            gpu=sample.gpu,
            period_s=self.period_s,
            triples=triples,
            absent=absent,
            kernels=sorted(kernels, key=lambda k: -k.share),
            gpu_name=sample.gpu_name,
        )


# ---------------------------------------------------------------- kernel class of a vector


def hot_kernel_class(vector: StateVector) -> KernelClass:
    return classify_kernel(vector.kernels[0].kernel) if vector.kernels else "unknown"


# ---------------------------------------------------------------- compact rendering

_SHORT_TIME = {"delta_15s": "d15s", "delta_1m": "d1m", "trend_5m": "tr5m", "anomaly_score": "z"}


_SHORT_UNIT = {"pct": "%", "pct_of_peak": "%peak"}


def _num(v: float) -> str:
    """Three significant digits, whole numbers from 1000 up, exponent from 1e6 up: 0.114, 14.1, 2460."""
    if v == 0:
        return "0"
    if abs(v) >= 1e6:
        return f"{v:.2e}"
    return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def render_compact(
    vector: StateVector,
    kernel_class: KernelClass | None = None,
    *,
    max_resources: int | None = None,
    max_kernels: int = 3,
) -> str:
    """A few lines per vector: header, hot kernels, one line per (resource, space), absent by reason.

    Example line: `tensor_core_util 11.4% z=4.1 d15s=-3.1 d1m=-5 tr5m=+0.2/min <dcgm:1004>`.
    """
    cls = kernel_class or hot_kernel_class(vector)
    lines = [
        f"gpu {vector.gpu_name or vector.gpu} node {vector.node} period {_num(vector.period_s)}s class {cls}"
    ]
    if vector.kernels:
        hot = "; ".join(
            f"{k.kernel} {k.share * 100:.0f}% {k.launches}x"
            + (f" {_num(k.mean_us)}us" if k.mean_us is not None else "")
            for k in vector.kernels[:max_kernels]
        )
        lines.append(f"hot: {hot}")
    rows: dict[tuple[str, str, str], list[StateTriple]] = {}
    for t in order_triples(vector.triples, cls):
        rows.setdefault((t.resource, t.space, t.source), []).append(t)
    for n, ((resource, space, source), ts) in enumerate(rows.items()):
        if max_resources is not None and n >= max_resources:
            lines.append(f"(+{len(rows) - n} more)")
            break
        name = resource if space == "global_avg" else f"{resource}@{space}"
        parts = [name]
        for t in ts:
            if t.time == "current":
                parts.append(f"{_num(t.value)}{_SHORT_UNIT.get(t.unit, t.unit)}")
            elif t.time == "trend_5m":
                parts.append(f"tr5m={'+' if t.value >= 0 else ''}{_num(t.value)}/min")
            else:
                parts.append(f"{_SHORT_TIME[t.time]}={_num(t.value)}")
        parts.append(f"<{source}>")
        lines.append(" ".join(parts))
    by_reason: dict[str, list[str]] = {}
    for a in vector.absent:  # the parenthesised detail (which ncu metric) stays in the vector, not the prompt
        by_reason.setdefault(a.reason.split(" (")[0], []).append(a.resource)
    for reason, names in by_reason.items():
        lines.append(f"absent {','.join(names)}: {reason}")
    return "\n".join(lines)
