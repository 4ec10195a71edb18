"""State-change detectors: rules with thresholds, hysteresis and minimum durations, edge-triggered.

Feed samples in, get StateChangeEvents out; nothing here does I/O. Each rule turns a sample (plus the hot
kernels from launch telemetry) into one reading: a value compared with an enter threshold and, once
active, with a looser exit threshold (hysteresis), or "not applicable" (its preconditions fail: counts as
the condition being off) or "unknown" (a needed dimension is absent: the state is held, timers restart).
An `Edge` turns readings into exactly one `start` after the condition held for `min_duration_s` and one
`clear` after it stayed off for `min_clear_s`; nothing is emitted in between.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from services.telemetry.records import RawSample
from shared.kernel_classes import KernelClass, classify_kernel
from shared.messages import KernelShare, Resource, StateChangeEvent, StateEventKind, StateTriple
from shared.nvml_clocks import CAPPING_REASONS

Direction = Literal["below", "above"]


@dataclass(frozen=True)
class Thresholds:
    """`below`: on when value < enter, off again when value > exit (exit >= enter). `above`: mirrored."""

    enter: float
    exit: float
    direction: Direction
    min_duration_s: float = 30.0
    min_clear_s: float = 30.0

    def __post_init__(self) -> None:
        if self.direction == "below" and self.exit < self.enter:
            raise ValueError(
                f"hysteresis for 'below' needs exit >= enter, got enter={self.enter} exit={self.exit}"
            )
        if self.direction == "above" and self.exit > self.enter:
            raise ValueError(
                f"hysteresis for 'above' needs exit <= enter, got enter={self.enter} exit={self.exit}"
            )
        if self.min_duration_s < 0 or self.min_clear_s < 0:
            raise ValueError("min_duration_s and min_clear_s are seconds >= 0")

    def on(self, v: float) -> bool:
        return v < self.enter if self.direction == "below" else v > self.enter

    def off(self, v: float) -> bool:
        return v > self.exit if self.direction == "below" else v < self.exit


@dataclass(frozen=True)
class Observation:
    """One sample with the hot kernels (share-sorted) and the class of the hottest."""

    sample: RawSample
    kernels: Sequence[KernelShare]
    hot: KernelShare | None
    hot_class: KernelClass


@dataclass(frozen=True)
class Reading:
    """value=None with applicable=True: unknown (hold). applicable=False: preconditions fail (off)."""

    value: float | None
    applicable: bool = True
    note: str = ""
    resources: tuple[Resource, ...] = ()


class Rule(Protocol):
    name: str
    event: StateEventKind
    thresholds: Thresholds

    def read(self, obs: Observation) -> Reading: ...

    def learn(self, obs: Observation, frozen: bool) -> None:
        """Update any baseline after the edge stepped; `frozen` while the condition is pending or active."""
        ...


# ---------------------------------------------------------------- the edge


@dataclass
class Edge:
    """inactive -(on for min_duration)-> active -(off for min_clear)-> inactive; one event per arrow."""

    thresholds: Thresholds
    active: bool = False
    pending_since: float | None = None
    clear_since: float | None = None

    def step(self, ts: float, r: Reading) -> Literal["start", "clear"] | None:
        th = self.thresholds
        if not self.active:
            on = r.applicable and r.value is not None and th.on(r.value)
            if not on:
                self.pending_since = None
                return None
            if self.pending_since is None:
                self.pending_since = ts
            if ts - self.pending_since >= th.min_duration_s:
                self.active, self.pending_since = True, None
                return "start"
            return None
        if r.applicable and r.value is None:
            self.clear_since = None  # unknown: hold the state, restart the clear timer
            return None
        off = (not r.applicable) or th.off(r.value)  # type: ignore[arg-type]
        if not off:
            self.clear_since = None
            return None
        if self.clear_since is None:
            self.clear_since = ts
        if ts - self.clear_since >= th.min_clear_s:
            self.active, self.clear_since = False, None
            return "clear"
        return None

    @property
    def frozen(self) -> bool:
        return self.active or self.pending_since is not None


# ---------------------------------------------------------------- rules

HOT_SHARE = 0.3  # a kernel is "the hot kernel" when it takes >= 30 % of timed GPU time
BUSY_PCT = 50.0  # SMs (or, without GPM, the GPU) busy at least half the window


def _busy(s: RawSample) -> float | None:
    v = s.value("sm_active")
    return s.value("gpu_util") if v is None else v


@dataclass
class TcUnderutilization:
    """Tensor pipe mostly idle while the SMs are busy with a GEMM/attention hot kernel.

    30 % enter / 40 % exit: GPU.md's bf16 8192^3 matmul runs at 89 of 784 TFLOP/s (11 %) in a 32x32x32 tile
    and 688 (88 %) at 128x256x64; below 30 % the config, not the problem, limits the tensor pipe.
    """

    name: str = "tc_underutilization"
    event: StateEventKind = "tc_underutilization"
    thresholds: Thresholds = Thresholds(enter=30.0, exit=40.0, direction="below")

    def read(self, obs: Observation) -> Reading:
        res: tuple[Resource, ...] = ("tensor_core_util", "sm_active", "gpu_util")
        if obs.hot is None or obs.hot.share < HOT_SHARE or obs.hot_class not in ("gemm", "attention"):
            return Reading(None, applicable=False, resources=res)
        busy = _busy(obs.sample)
        tc = obs.sample.value("tensor_core_util")
        if busy is None or tc is None:
            return Reading(None, resources=res)
        if busy < BUSY_PCT:
            return Reading(None, applicable=False, resources=res)
        return Reading(
            tc,
            note=f"SMs {busy:.0f}% busy; hot {obs.hot_class} {obs.hot.kernel} {obs.hot.share * 100:.0f}%",
            resources=res,
        )

    def learn(self, obs: Observation, frozen: bool) -> None:
        pass


@dataclass
class BandwidthLow:
    """DRAM bandwidth far below the roofline while a memory-bound (elementwise/reduction) kernel is hot.

    50 % enter / 60 % exit of peak: GPU.md measures 4.35 TB/s for a copy (about 90 % of the H200's
    4.8 TB/s datasheet figure) and naive Triton add/softmax/transpose reach 3.9-4.4 TB/s, so a memory-bound
    kernel under half of peak leaves most of its roofline unused.
    """

    name: str = "bandwidth_low"
    event: StateEventKind = "bandwidth_low"
    thresholds: Thresholds = Thresholds(enter=50.0, exit=60.0, direction="below")

    def read(self, obs: Observation) -> Reading:
        res: tuple[Resource, ...] = ("dram_bandwidth", "gpu_util")
        if obs.hot is None or obs.hot.share < HOT_SHARE or obs.hot_class not in ("elementwise", "reduction"):
            return Reading(None, applicable=False, resources=res)
        # gpu_util, not sm_active: a latency-bound kernel on few SMs is exactly the case to catch.
        util = obs.sample.value("gpu_util")
        bw = obs.sample.value("dram_bandwidth")
        if util is None or bw is None:
            return Reading(None, resources=res)
        if util < BUSY_PCT:
            return Reading(None, applicable=False, resources=res)
        return Reading(
            bw,
            note=f"kernels running {util:.0f}% of the time; hot {obs.hot_class} "
            f"{obs.hot.kernel} {obs.hot.share * 100:.0f}%",
            resources=res,
        )

    def learn(self, obs: Observation, frozen: bool) -> None:
        pass


@dataclass
class _Baseline:
    """An EWMA baseline per hot kernel (a different kernel legitimately has a different level)."""

    alpha: float
    warmup: int
    level: dict[str, float] = field(default_factory=dict)
    count: dict[str, int] = field(default_factory=dict)

    def get(self, key: str) -> float | None:
        return self.level.get(key) if self.count.get(key, 0) >= self.warmup else None

    def add(self, key: str, v: float) -> None:
        n = self.count.get(key, 0)
        self.level[key] = v if n == 0 else self.level[key] + self.alpha * (v - self.level[key])
        self.count[key] = n + 1


@dataclass
class DropBelowBaseline:
    """A resource falls `enter` points below its own baseline (learned while nothing is pending/active)."""

    name: str
    event: StateEventKind
    resource: Resource
    thresholds: Thresholds
    busy_gate: bool = False
    baseline: _Baseline = field(default_factory=lambda: _Baseline(alpha=0.2, warmup=4))

    def _key(self, obs: Observation) -> str:
        return obs.hot.kernel if obs.hot is not None else ""

    def read(self, obs: Observation) -> Reading:
        res: tuple[Resource, ...] = (self.resource,)
        cur = obs.sample.value(self.resource)
        base = self.baseline.get(self._key(obs))
        if self.busy_gate:
            busy = _busy(obs.sample)
            if busy is not None and busy < BUSY_PCT:
                return Reading(None, applicable=False, resources=res)
        if cur is None or base is None:
            return Reading(None, resources=res)
        return Reading(base - cur, note=f"{self.resource} {cur:.3g} vs baseline {base:.3g}", resources=res)

    def learn(self, obs: Observation, frozen: bool) -> None:
        cur = obs.sample.value(self.resource)
        if cur is not None and not frozen:
            self.baseline.add(self._key(obs), cur)


def occupancy_drop() -> DropBelowBaseline:
    # 10 points: NVIDIA's ncu occupancy rule flags achieved occupancy 10+ points below theoretical (GPU.md).
    return DropBelowBaseline(
        name="occupancy_drop",
        event="occupancy_drop",
        resource="occupancy",
        thresholds=Thresholds(enter=10.0, exit=5.0, direction="above"),
        busy_gate=True,
    )


def l2_miss_spike() -> DropBelowBaseline:
    # 15 points of hit rate lost: with a ~60 MB L2, a working set that stops fitting shows as a step of tens
    # of points; 15 is above the point-to-point jitter of a steady kernel. Needs an l2_hit_rate source (ncu).
    return DropBelowBaseline(
        name="l2_miss_spike",
        event="l2_miss_spike",
        resource="l2_hit_rate",
        thresholds=Thresholds(enter=15.0, exit=7.5, direction="above"),
    )


# Reasons that lower the clock of a loaded GPU (shared/nvml_clocks.py); gpu_idle,
# applications_clocks_setting, sync_boost and display_clock_setting do not.
THROTTLE_REASONS = CAPPING_REASONS


@dataclass
class Throttling:
    """Any power/thermal/hardware clock-event reason active for 10 s (two samples at a 15 s period)."""

    name: str = "throttling"
    event: StateEventKind = "throttling"
    thresholds: Thresholds = Thresholds(enter=0.5, exit=0.5, direction="above", min_duration_s=10.0)

    def read(self, obs: Observation) -> Reading:
        reasons = obs.sample.clock_event_reasons
        if reasons is None:
            return Reading(None, resources=("sm_clock", "power"))
        active = sorted(THROTTLE_REASONS.intersection(reasons))
        return Reading(
            float(len(active)),
            note="reasons: " + (",".join(active) or "none"),
            resources=("sm_clock", "power"),
        )

    def learn(self, obs: Observation, frozen: bool) -> None:
        pass


# Scale floors per unit: below these a change is measurement noise, not an anomaly.
_UNIT_FLOOR = {"pct": 1.0, "pct_of_peak": 1.0, "MHz": 15.0, "W": 5.0, "GB/s": 0.1, "MiB": 256.0}
ANOMALY_RESOURCES: tuple[Resource, ...] = (
    "sm_active",
    "gpu_util",
    "tensor_core_util",
    "dram_bandwidth",
    "occupancy",
    "sm_clock",
    "power",
    "pcie_bw",
    "nvlink_bw",
)
MEAN_ABS_TO_SIGMA = 1.2533  # mean absolute deviation of a normal distribution times this is sigma


@dataclass
class Anomaly:
    """Robust EWMA score: |x - m| / scale per resource, the largest wins.

    m and the mean absolute deviation d are EWMAs (alpha 0.1: about 10 samples of memory, 2.5 min at 15 s)
    updated with x clipped to m +- 3 scale (a Huber step), so one outlier barely moves the baseline and a
    lasting level shift is learned within a few minutes. 10 samples of warm-up before any score.
    """

    name: str = "anomaly"
    event: StateEventKind = "anomaly"
    thresholds: Thresholds = Thresholds(enter=6.0, exit=3.0, direction="above", min_duration_s=0.0)
    alpha: float = 0.1
    warmup: int = 10
    state: dict[str, tuple[float, float, int]] = field(default_factory=dict)

    def _scale(self, m: float, d: float, unit: str) -> float:
        return max(MEAN_ABS_TO_SIGMA * d, 0.05 * abs(m), _UNIT_FLOOR.get(unit, 1e-6))

    def read(self, obs: Observation) -> Reading:
        best: tuple[float, str, float, float] | None = None
        for r in ANOMALY_RESOURCES:
            met = obs.sample.get(r)
            st = self.state.get(r)
            if met is None or st is None or st[2] < self.warmup:
                continue
            m, d, _ = st
            z = abs(met.value - m) / self._scale(m, d, met.unit)
            if best is None or z > best[0]:
                best = (z, r, met.value, m)
        if best is None:
            return Reading(None, resources=ANOMALY_RESOURCES)
        z, r, x, m = best
        note = f"{r} {x:.3g} vs EWMA {m:.3g} (score {z:.1f})"
        return Reading(z, note=note, resources=(r,))  # type: ignore[arg-type]

    def learn(self, obs: Observation, frozen: bool) -> None:
        for r in ANOMALY_RESOURCES:
            met = obs.sample.get(r)
            if met is None:
                continue
            st = self.state.get(r)
            if st is None:
                self.state[r] = (met.value, 0.0, 1)
                continue
            m, d, n = st
            lim = 3.0 * self._scale(m, d, met.unit)
            x = min(max(met.value, m - lim), m + lim)
            self.state[r] = (m + self.alpha * (x - m), d + self.alpha * (abs(x - m) - d), n + 1)


def default_rules() -> list[Rule]:
    """A fresh set of the six rules (rules hold baselines: one set per GPU)."""
    return [TcUnderutilization(), BandwidthLow(), l2_miss_spike(), occupancy_drop(), Throttling(), Anomaly()]


# ---------------------------------------------------------------- the bank


class DetectorBank:
    """All rules for one GPU. `feed` is pure apart from the rules' own state."""

    def __init__(
        self,
        node: str,
        gpu: str,
        rules: Sequence[Rule] | None = None,
        *,
        source: str = "telemetry",
        kernel_classes: Mapping[str, KernelClass] | None = None,
        max_hot: int = 3,
    ) -> None:
        self.node = node
        self.gpu = gpu
        self.rules = list(default_rules() if rules is None else rules)
        names = [r.name for r in self.rules]
        if len(set(names)) != len(names):
            raise ValueError(f"rule names must be unique, got {names}")
        self.edges = {r.name: Edge(r.thresholds) for r in self.rules}
        self.source = source
        self.kernel_classes = dict(kernel_classes or {})
        self.max_hot = max_hot

    @property
    def active(self) -> list[str]:
        return [name for name, e in self.edges.items() if e.active]

    def observe(self, sample: RawSample, kernels: Sequence[KernelShare]) -> Observation:
        ks = sorted(kernels, key=lambda k: -k.share)
        hot = ks[0] if ks else None
        cls: KernelClass = "unknown"
        if hot is not None:
            cls = self.kernel_classes.get(hot.kernel) or classify_kernel(hot.kernel)
        return Observation(sample=sample, kernels=ks, hot=hot, hot_class=cls)

    def feed(
        self, sample: RawSample, kernels: Sequence[KernelShare] = (), *, causation_id: str | None = None
    ) -> list[StateChangeEvent]:
        if sample.gpu != self.gpu:
            raise ValueError(f"sample of GPU {sample.gpu} fed to the detectors of GPU {self.gpu}")
        obs = self.observe(sample, kernels)
        out: list[StateChangeEvent] = []
        for rule in self.rules:
            edge = self.edges[rule.name]
            reading = rule.read(obs)
            since = edge.pending_since if not edge.active else edge.clear_since
            edge_kind = edge.step(sample.ts, reading)
            rule.learn(obs, edge.frozen)
            if edge_kind is not None:
                held = sample.ts - (since if since is not None else sample.ts)
                out.append(self._event(rule, edge_kind, reading, obs, held, causation_id))
        return out

    def _event(
        self,
        rule: Rule,
        edge: Literal["start", "clear"],
        r: Reading,
        obs: Observation,
        held_s: float,
        causation_id: str | None,
    ) -> StateChangeEvent:
        th = rule.thresholds
        if r.value is None:
            what = "preconditions no longer hold"
        else:
            op = (
                ("<" if th.direction == "below" else ">")
                if edge == "start"
                else (">" if th.direction == "below" else "<")
            )
            limit = th.enter if edge == "start" else th.exit
            what = f"value {r.value:.3g} {op} {limit:g}"
        detail = f"{rule.name} {edge}: {what} for {held_s:.0f}s" + (f"; {r.note}" if r.note else "")
        triples = [
            StateTriple(m.resource, "current", m.space, m.value, m.unit, m.source)
            for m in obs.sample.metrics
            if m.resource in r.resources
        ]
        return StateChangeEvent(
            source=self.source,
            ts=obs.sample.ts,
            causation_id=causation_id,
            event=rule.event,
            edge=edge,
            node=self.node,
            gpu=self.gpu,
            detector=f"rule:{rule.name}/v1",
            triples=triples,
            hot_kernels=list(obs.kernels[: self.max_hot]),
            detail=detail,
        )
