"""Worker-side GPU timing: Triton do_bench's method, one sample per call, with NVML clock state per sample.

GPU.md "Timing method": one call and sync first; zero a 256 MiB buffer (Triton's
`get_empty_cache_for_benchmark`, >= 2x the 60 MiB L2) before every timed call, outside the CUDA-event
pair; warm-up and repetitions sized by time budgets from a 5-call estimate; CUDA-graph replay for calls
under ~10 us. Unlike do_bench, each sample is synchronised and followed by an NVML read of the
clock-event reasons, so samples taken under power or thermal capping can be dropped, and several callables
can be interleaved in one process (A/B).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from services.toolrunner.timing_stats import calls_per_graph, reason_names, reps_for_budget, use_graph
from shared.messages import Provenance
from shared.tools.bench import ClockSample

FLUSH_BYTES = 256 * 1024 * 1024  # triton.backends.nvidia.driver.get_empty_cache_for_benchmark
# Bounds wall time: each rep also pays the flush (~85 us for 256 MiB at ~3 TB/s) and a synchronise, so
# 5000 reps of a tiny kernel take ~1 s.
MAX_REPS = 5000


class Nvml:
    """SM clock and clock-event reasons of the device torch uses; every field None when NVML is missing."""

    def __init__(self, gpu_index: int) -> None:
        self.handle: Any = None
        self.error = ""
        try:
            import pynvml
            import torch

            pynvml.nvmlInit()
            self.nv = pynvml
            try:  # CUDA_VISIBLE_DEVICES renumbers devices; NVML does not: match by UUID.
                uuid = str(torch.cuda.get_device_properties(0).uuid)
                self.handle = pynvml.nvmlDeviceGetHandleByUUID(
                    f"GPU-{uuid}" if not uuid.startswith("GPU-") else uuid
                )
            except Exception:  # noqa: BLE001 - older torch without .uuid: fall back to the index
                self.handle = pynvml.nvmlDeviceGetHandleByIndex(gpu_index)
        except Exception as e:  # noqa: BLE001
            self.error = f"NVML unavailable: {type(e).__name__}: {e}"

    def mask(self) -> int | None:
        if self.handle is None:
            return None
        get = (
            getattr(self.nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
            or self.nv.nvmlDeviceGetCurrentClocksThrottleReasons
        )
        try:
            return int(get(self.handle))
        except Exception:  # noqa: BLE001 - a failed read is "not known", not "not capped"
            return None

    def sample(self) -> ClockSample:
        if self.handle is None:
            return ClockSample(not_measured=self.error or "NVML unavailable")
        try:
            clock = int(self.nv.nvmlDeviceGetClockInfo(self.handle, self.nv.NVML_CLOCK_SM))
        except Exception:  # noqa: BLE001
            clock = None
        m = self.mask()
        return ClockSample(
            sm_clock_mhz=clock, reasons_mask=m, reasons=reason_names(m) if m is not None else []
        )

    def driver(self) -> str:
        try:
            v = self.nv.nvmlSystemGetDriverVersion()
            return v.decode() if isinstance(v, bytes) else str(v)
        except Exception:  # noqa: BLE001
            return ""


def provenance(nvml: Nvml, method: str) -> Provenance:
    import torch
    import triton

    return Provenance(
        device=torch.cuda.get_device_name(0),
        driver=nvml.driver(),
        cuda=str(torch.version.cuda),
        triton=str(triton.__version__),
        torch=str(torch.__version__),
        method=method,
    )


@dataclass
class Timed:
    """One callable's samples (ms per call) and the NVML reason mask read after each."""

    samples: list[float] = field(default_factory=list)
    masks: list[int | None] = field(default_factory=list)


@dataclass
class Plan:
    estimate_ms: float
    n_warmup: int
    n_reps: int
    graph: bool
    calls_per_sample: int


class Bench:
    def __init__(self) -> None:
        import torch
        import triton

        self.torch = torch
        self.driver = triton.runtime.driver.active
        self.cache = self.driver.get_empty_cache_for_benchmark()

    def flush(self) -> None:
        self.driver.clear_cache(self.cache)

    def estimate(self, fn: Callable[[], Any]) -> float:
        """do_bench's estimate: one call + sync, then 5 flushed calls between one event pair."""
        torch = self.torch
        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            self.flush()
            fn()
        end.record()
        torch.cuda.synchronize()
        # The 5 flushes are inside the pair; take them out with one flush-only measurement.
        f0, f1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        f0.record()
        for _ in range(5):
            self.flush()
        f1.record()
        torch.cuda.synchronize()
        return max(0.0, (start.elapsed_time(end) - f0.elapsed_time(f1)) / 5)

    def plan(self, estimate_ms: float, warmup_ms: float, rep_ms: float, graph_mode: str) -> Plan:
        graph = use_graph(graph_mode, estimate_ms)
        k = calls_per_graph(estimate_ms) if graph else 1
        return Plan(
            estimate_ms=estimate_ms,
            n_warmup=reps_for_budget(warmup_ms, estimate_ms),
            n_reps=min(MAX_REPS, reps_for_budget(rep_ms, estimate_ms * k)),
            graph=graph,
            calls_per_sample=k,
        )

    def as_graph(self, fn: Callable[[], Any], k: int) -> Callable[[], Any]:
        """A replay of `k` unrolled calls captured in one CUDA graph (do_bench_cudagraph's approach)."""
        torch = self.torch
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()  # warm up on a side stream before capture, as torch.cuda.graphs requires
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(k):
                fn()
        torch.cuda.synchronize()
        return g.replay

    def run(self, fns: Sequence[Callable[[], Any]], plan: Plan, nvml: Nvml) -> list[Timed]:
        """Warm up each callable, then `n_reps` rounds; round i runs them in order, reversed when i is odd
        (ABBA), each preceded by a flush outside its event pair, synchronised and followed by an NVML read."""
        torch = self.torch
        calls = [self.as_graph(f, plan.calls_per_sample) if plan.graph else f for f in fns]
        for c in calls:
            for _ in range(max(1, plan.n_warmup // plan.calls_per_sample)):
                c()
        torch.cuda.synchronize()
        out = [Timed() for _ in calls]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for i in range(plan.n_reps):
            order = range(len(calls)) if i % 2 == 0 else reversed(range(len(calls)))
            for j in order:
                self.flush()
                start.record()
                calls[j]()
                end.record()
                end.synchronize()
                out[j].samples.append(start.elapsed_time(end) / plan.calls_per_sample)
                out[j].masks.append(nvml.mask())
        return out


def describe(plan: Plan, interleaved: int = 1) -> str:
    how = (
        f"CUDA graph replay of {plan.calls_per_sample} calls per sample (L2 flushed before each replay, "
        "so only its first call starts cold)"
        if plan.graph
        else "one call per sample"
    )
    inter = f"; {interleaved} versions interleaved ABBA in one process" if interleaved > 1 else ""
    return (
        f"triton do_bench method: {how}; {FLUSH_BYTES >> 20} MiB buffer zeroed before every timed call "
        f"outside the CUDA event pair; warm-up and reps sized from a {plan.estimate_ms:.4f} ms estimate; "
        f"each sample synchronised and tagged with NVML clock-event reasons; median, p20, p80, CV{inter}"
    )
