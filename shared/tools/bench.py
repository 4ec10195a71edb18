"""bench, bench_ab and autotune tool records (GPU only). Times are milliseconds of GPU time."""

from __future__ import annotations

from typing import Literal

import msgspec

from shared.messages import Provenance, Scalar

ShapeName = str  # "micro", "full" or "edge:<i>"
GraphMode = Literal["auto", "on", "off"]


class TimingStats(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    n: int
    median_ms: float
    p20_ms: float
    p80_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    cv: float  # sample standard deviation / mean


class ClockSample(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """NVML state at one moment: SM clock and the clock-event (throttle) reasons active then."""

    sm_clock_mhz: int | None = None
    reasons_mask: int | None = None
    reasons: list[str] = []  # names of the set bits, e.g. ["sw_power_cap"]
    not_measured: str | None = None  # why the fields are empty (no NVML, ...)


class BenchMethod(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How the samples were taken (GPU.md "Timing method"), stated with every figure."""

    description: str
    warmup_ms: float
    rep_ms: float
    estimate_ms: float  # the first estimate of one call, which sized warm-up and repetitions
    n_warmup: int
    n_reps: int
    cuda_graph: bool
    calls_per_sample: int  # > 1 only with CUDA-graph replay (sample = replay time / calls)
    flush_bytes: int  # the buffer zeroed before every timed call, outside the event pair
    dropped_throttled: int = 0  # samples taken under thermal or power capping, left out
    throttled_kept: bool = False  # too few unthrottled samples were left, so all were kept
    # Why CUDA-graph replay was not used though the mode asked for it (a host sync in the launch path),
    # with the whole exception message and the task line; "" when it was used or not asked for.
    graph_fallback: str = ""


class BenchInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    shape: ShapeName = "full"
    config: dict[str, Scalar] = {}  # overrides of the task's CONFIG
    seed: int = 0
    warmup_ms: float = 25.0  # Triton do_bench's budgets
    rep_ms: float = 100.0
    cuda_graph: GraphMode = "auto"  # auto = replay a CUDA graph when one call is under 10 us
    gpu: int = 0
    timeout_s: float = 300.0


class BenchOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    samples_ms: list[float]
    stats: TimingStats
    method: BenchMethod
    clocks_before: ClockSample
    clocks_after: ClockSample
    config: dict[str, Scalar]  # the full config that ran (CONFIG with the overrides)
    tflops: float | None = None  # task flops(shape) / median, when the task has the formula
    tbytes_per_s: float | None = None  # task bytes_moved(shape) / median
    provenance: Provenance = msgspec.field(default_factory=Provenance)


class BenchSubject(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One side of an A/B comparison: a task file (version) and its config overrides."""

    task_path: str
    config: dict[str, Scalar] = {}
    label: str = ""


class BenchABInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    a: BenchSubject  # the baseline
    b: BenchSubject  # the candidate
    shape: ShapeName = "full"
    seed: int = 0
    warmup_ms: float = 25.0
    rep_ms: float = 100.0  # per side
    cuda_graph: GraphMode = "auto"
    n_bootstrap: int = 2000
    bootstrap_seed: int = 0
    gpu: int = 0
    timeout_s: float = 600.0


class BenchSide(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    label: str
    config: dict[str, Scalar]
    samples_ms: list[float]
    stats: TimingStats


class BenchABOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    a: BenchSide
    b: BenchSide
    # median(a) / median(b): > 1 means b is faster. The interval is a percentile bootstrap of that ratio
    # (each side resampled independently).
    speedup: float
    ci_low: float
    ci_high: float
    ci_level: float = 0.95
    order: str = "ABBA"  # the interleaving: pairs alternate which side runs first
    method: BenchMethod
    clocks_before: ClockSample
    clocks_after: ClockSample
    provenance: Provenance = msgspec.field(default_factory=Provenance)


class AutotuneInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    shape: ShapeName = "full"
    # Configs to time (each merged over CONFIG); empty = the task's SPACE expanded over CONFIG and
    # filtered by its `constraint`.
    configs: list[dict[str, Scalar]] = []
    max_configs: int = 64
    seed: int = 0
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    gpu: int = 0
    timeout_s: float = 600.0


class ConfigTiming(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    config: dict[str, Scalar]
    # Triton's autotuner gives a failed config inf; JSON has no inf, so here it is None with `error`.
    median_ms: float | None
    p20_ms: float | None = None
    p80_ms: float | None = None
    error: str = ""  # "OutOfResources: ...", "PTXASError: ...", or another exception's first line
    compile_error: bool = False  # one of the errors Triton's autotuner turns into inf


class AutotuneOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    results: list[ConfigTiming]  # in the order timed
    best: ConfigTiming | None  # the fastest config that ran; None if all failed
    space_size: int  # configs the space held before max_configs
    method: str
    clocks_before: ClockSample
    clocks_after: ClockSample
    provenance: Provenance = msgspec.field(default_factory=Provenance)
