"""Worker-side GPU timing: Triton do_bench's method, one sample per call, with NVML clock state per sample.

GPU.md "Timing method": one call and sync first; zero a 256 MiB buffer (Triton's
`get_empty_cache_for_benchmark`, >= 2x the 60 MiB L2) before every timed call, outside the CUDA-event
pair; warm-up and repetitions sized by time budgets from a 5-call estimate; CUDA-graph replay for calls
under ~10 us. Like do_bench, samples are enqueued without a sync between them (in chunks of ~10 ms of GPU
work, the next chunk enqueued before waiting on this one); unlike it, NVML's clock-event reasons are read
at every chunk boundary, so samples taken under power or thermal capping can be dropped, and several
callables can be interleaved in one process (A/B).

Measured on the H200 (tests/fixtures/h200/bench_vector_add_micro.json, bench_ab_vector_add.json,
benchmarks/results/h200/bench_tool_noise.json), the first version of this module got two things wrong:
- its estimate timed 5 (flush + call) between one event pair and subtracted 5 flushes timed afterwards;
  the first pair also held the first flush ever (torch's fill kernel loaded lazily), ~5 ms: estimates of
  1.04 ms for a 3.6 us call (so no graph replay), 1.23 ms for 0.32 ms and 1.99 ms for 0.74 ms (so 50-60
  samples where do_bench's 100 ms budget gives ~135). Now: warm calls and flush first, then 5 calls, each
  after a flush and between its own event pair, and their median (flush outside the events).
- it synchronised and read NVML after every sample, so the GPU went idle between samples and any host
  delay longer than the ~70 us flush (the Python launch, an NVML read, the OS) landed inside the next
  sample's event pair: positive-only outliers, +4 % to +29 %, in runs (bench_ab rounds 10-13 on both
  sides at once); within-run CV 0.31-3.12 % on the 0.74 ms add.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from services.toolrunner.graph_capture import decide_graph, sync_refusal
from services.toolrunner.timing_stats import (
    CHUNK_MS,
    calls_per_graph,
    estimate_from_calls,
    reason_names,
    reps_for_budget,
    rounds_per_chunk,
)
from shared.messages import Provenance
from shared.tools.bench import ClockSample

FLUSH_BYTES = 256 * 1024 * 1024  # triton.backends.nvidia.driver.get_empty_cache_for_benchmark
# Bounds wall time: each rep also pays the flush (~70-85 us for 256 MiB at 3-4 TB/s), so 5000 reps of a
# tiny kernel take ~0.5 s.
MAX_REPS = 5000
ESTIMATE_CALLS = 5  # do_bench's
# A GPU-side spin (torch.cuda._sleep) before each estimate pair, ~100 us at the H200's 1.98 GHz: the pair
# must time the GPU's work, not the host's launch. H200 run r32: an in-place add of 4099 floats (a ~3 us
# kernel) estimated at 53 us after flush + restore, above the 10 us graph threshold, so auto timed it one
# launch per sample and reported host latency (median 21 us) instead of replaying a graph.
HOLD_CYCLES = 200_000


def _nothing() -> None:
    return None


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
    flush_ms: float = 0.0  # one flush's GPU time, measured with the estimate (sizes the chunks)
    restored: bool = False  # declared in-place inputs restored before every timed call (INPLACE)
    graph_fallback: str = ""  # why no CUDA graph was replayed though the mode asked for one, in full


def or_masks(a: int | None, b: int | None) -> int | None:
    """Reasons seen in either read; None only when neither read worked (not known, not "not capped")."""
    return None if a is None and b is None else (a or 0) | (b or 0)


class Bench:
    def __init__(self) -> None:
        import torch
        import triton

        self.torch = torch
        self.driver = triton.runtime.driver.active
        self.cache = self.driver.get_empty_cache_for_benchmark()
        self.flush_ms = 0.0  # set by estimate()

    def flush(self) -> None:
        self.driver.clear_cache(self.cache)

    def _event(self) -> Any:
        return self.torch.cuda.Event(enable_timing=True)

    def estimate(self, fn: Callable[[], Any], before: Callable[[], Any] = _nothing) -> float:
        """One call's GPU time, taken as the samples are: the first call (it compiles) and the first flush
        (torch loads its fill kernel lazily, ~5 ms on the H200) run untimed, then 5 calls, each after a
        flush, a GPU-side hold (HOLD_CYCLES) and between its own event pair, enqueued without a sync; their
        median. Also times one flush."""
        torch = self.torch
        before()
        fn()
        self.flush()
        before()
        fn()
        torch.cuda.synchronize()
        pairs = [(self._event(), self._event()) for _ in range(ESTIMATE_CALLS)]
        for start, end in pairs:
            self.flush()  # outside the pair, as in every sample
            before()
            hold = getattr(torch.cuda, "_sleep", None)  # torch's GPU-side spin (absent from test doubles)
            if hold is not None:
                hold(HOLD_CYCLES)  # the GPU waits here while the host enqueues the call
            start.record()
            fn()
            end.record()
        f0, f1 = self._event(), self._event()
        f0.record()
        self.flush()
        f1.record()
        torch.cuda.synchronize()
        self.flush_ms = f0.elapsed_time(f1)
        return estimate_from_calls([s.elapsed_time(e) for s, e in pairs])

    def plan(
        self,
        estimate_ms: float,
        warmup_ms: float,
        rep_ms: float,
        graph_mode: str,
        restored: bool = False,
        refusal: Callable[[], str] = lambda: "",
    ) -> Plan:
        """`restored`: the call's in-place inputs are restored before each timed call, so a graph replays
        one call (k unrolled calls would run each on the previous call's output). `refusal`: why the call
        cannot be captured ("" = it can), asked only when the mode wants a graph (graph_refusal)."""
        graph, fallback = decide_graph(graph_mode, estimate_ms, refusal)
        k = calls_per_graph(estimate_ms) if graph and not restored else 1
        return Plan(
            estimate_ms=estimate_ms,
            n_warmup=reps_for_budget(warmup_ms, estimate_ms),
            n_reps=min(MAX_REPS, reps_for_budget(rep_ms, estimate_ms * k)),
            graph=graph,
            calls_per_sample=k,
            flush_ms=self.flush_ms,
            restored=restored,
            graph_fallback=fallback,
        )

    def graph_refusal(
        self, fn: Callable[[], Any], task_file: str, before: Callable[[], Any] = _nothing
    ) -> str:
        """Why `fn` cannot be replayed from a CUDA graph ("" = it can): one call under torch's sync debug
        mode "error" (a host sync raises instead of waiting: `.item()`, `.cpu()`, a blocking copy), then
        a trial capture of one call. Either failure is reported whole (graph_capture.py)."""
        torch = self.torch
        previous = torch.cuda.get_sync_debug_mode()
        torch.cuda.synchronize()
        try:
            before()
            torch.cuda.set_sync_debug_mode("error")
            fn()
        except Exception as e:  # noqa: BLE001 - user code: the error is the reason
            return sync_refusal(e, task_file, "synchronises with the host")
        finally:
            torch.cuda.set_sync_debug_mode(previous)
        try:
            before()
            self.as_graph(fn, 1)
        except Exception as e:  # noqa: BLE001
            try:
                torch.cuda.synchronize()  # a failed capture is not sticky; this clears its pending work
            except Exception:  # noqa: BLE001, S110 - the reason below is what matters
                pass
            return sync_refusal(e, task_file, "cannot be captured in a CUDA graph")
        return ""

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

    def run(
        self,
        fns: Sequence[Callable[[], Any]],
        plan: Plan,
        nvml: Nvml,
        befores: Sequence[Callable[[], Any]] = (),
    ) -> list[Timed]:
        """Warm up each callable (flush + call, as sampled), then `n_reps` rounds; round i runs them in
        order, reversed when i is odd (ABBA), each after a flush outside its own event pair.

        Rounds go to the GPU in chunks of ~CHUNK_MS: chunk c+1 is enqueued before the host waits for chunk
        c, so the GPU always has queued work and no host delay falls between a sample's events. NVML's
        clock-event reasons are read before the first chunk and as each chunk finishes; every sample of a
        chunk carries the OR of the two reads around it. `befores[j]` runs before each call of fns[j],
        after the flush and outside the events (restoring in-place inputs)."""
        torch = self.torch
        k = plan.calls_per_sample
        pre = list(befores) or [_nothing] * len(fns)
        calls = [self.as_graph(f, k) if plan.graph else f for f in fns]
        for c, b in zip(calls, pre):
            for _ in range(max(1, plan.n_warmup // k)):
                self.flush()
                b()
                c()
        torch.cuda.synchronize()
        per_chunk = rounds_per_chunk(len(calls) * (plan.flush_ms + plan.estimate_ms * k), plan.n_reps)
        chunks = [range(a, min(a + per_chunk, plan.n_reps)) for a in range(0, plan.n_reps, per_chunk)]
        pairs = [[(self._event(), self._event()) for _ in calls] for _ in range(plan.n_reps)]
        done = [self._event() for _ in chunks]

        def enqueue(c: int) -> None:
            for i in chunks[c]:
                for j in range(len(calls)) if i % 2 == 0 else reversed(range(len(calls))):
                    start, end = pairs[i][j]
                    self.flush()
                    pre[j]()
                    start.record()
                    calls[j]()
                    end.record()
            done[c].record()

        out = [Timed() for _ in calls]
        mask = nvml.mask()
        enqueue(0)
        for c in range(len(chunks)):
            if c + 1 < len(chunks):
                enqueue(c + 1)  # queued behind chunk c before the host waits on it
            done[c].synchronize()
            after = nvml.mask()
            for i in chunks[c]:
                for j, (start, end) in enumerate(pairs[i]):
                    out[j].samples.append(start.elapsed_time(end) / k)
                    out[j].masks.append(or_masks(mask, after))
            mask = after
        return out


def describe(plan: Plan, interleaved: int = 1) -> str:
    how = (
        f"CUDA graph replay of {plan.calls_per_sample} calls per sample (L2 flushed before each replay, "
        "so only its first call starts cold)"
        if plan.graph
        else f"one call per sample ({plan.graph_fallback})" if plan.graph_fallback
        else "one call per sample"
    )
    inter = f"; {interleaved} versions interleaved ABBA in one process" if interleaved > 1 else ""
    if plan.restored:
        inter += "; the declared in-place inputs (INPLACE) restored before every timed call, outside the events"
    return (
        f"triton do_bench method: {how}; {FLUSH_BYTES >> 20} MiB buffer zeroed before every timed call "
        f"outside the CUDA event pair; warm-up and reps sized from a {plan.estimate_ms:.4f} ms estimate "
        f"(median of {ESTIMATE_CALLS} flushed calls, each in its own event pair); samples enqueued without "
        f"a sync between them, in chunks of ~{CHUNK_MS:g} ms of GPU work, each chunk's samples tagged with "
        f"the NVML clock-event reasons read around it; median, p20, p80, CV{inter}"
    )
