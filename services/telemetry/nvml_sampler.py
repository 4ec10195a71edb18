"""The default device sampler: NVML readings plus NVML GPM (GPU Performance Monitoring) metrics.

NVML gives utilisation, SM clock, clock-event reasons, power and memory on any NVIDIA GPU. GPM (Hopper
and later) gives the profiler-grade device-wide counters: SM activity, occupancy, tensor activity, DRAM,
PCIe and NVLink bandwidth, each computed by NVML from two GPM snapshots (the previous call's and this
one's), so the first `sample()` covers the time since the constructor. Metric ids are pynvml's
NVML_GPM_METRIC_* constants; the H200 probe (fixtures/h200-probe/README.md) answered ids 1, 2, 3, 5,
10-13, 20, 21, 60, 61.

Without a GPU or driver the constructor raises SamplerUnavailable: this sampler never returns zeros.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from services.telemetry.records import RawMetric, RawSample, SamplerUnavailable
from shared.messages import AbsentDimension, Resource
from shared.nvml_clocks import decode_clock_event_reasons

# GPM metric id -> (resource, unit, scale to our unit). Ids from pynvml NVML_GPM_METRIC_*.
# 20/21 and 60/61 are summed into one bandwidth each (tx + rx); MiB/s -> GB/s is 1048576 / 1e9.
_MIB_S_TO_GB_S = 1048576 / 1e9
GPM_SINGLE: dict[int, tuple[Resource, str, float]] = {
    2: ("sm_active", "pct", 1.0),  # NVML_GPM_METRIC_SM_UTIL: percentage of SMs busy
    3: ("occupancy", "pct", 1.0),  # NVML_GPM_METRIC_SM_OCCUPANCY: active warps vs theoretical max
    5: ("tensor_core_util", "pct", 1.0),  # NVML_GPM_METRIC_ANY_TENSOR_UTIL
    10: ("dram_bandwidth", "pct_of_peak", 1.0),  # NVML_GPM_METRIC_DRAM_BW_UTIL
}
GPM_SUMMED: dict[Resource, tuple[tuple[int, int], str, float]] = {
    "pcie_bw": ((20, 21), "GB/s", _MIB_S_TO_GB_S),  # PCIE_TX_PER_SEC + PCIE_RX_PER_SEC (MiB/s)
    "nvlink_bw": ((60, 61), "GB/s", _MIB_S_TO_GB_S),  # NVLINK_TOTAL_RX + NVLINK_TOTAL_TX (MiB/s)
}
GPM_IDS: tuple[int, ...] = (2, 3, 5, 10, 20, 21, 60, 61)

def gpm_metrics(
    values: dict[int, float], errors: dict[int, str]
) -> tuple[list[RawMetric], list[AbsentDimension]]:
    """GPM metric values by id (already checked per metric) -> our metrics, and what is absent."""
    metrics: list[RawMetric] = []
    absent: list[AbsentDimension] = []
    for mid, (resource, unit, scale) in GPM_SINGLE.items():
        if mid in values:
            metrics.append(
                RawMetric(resource=resource, value=values[mid] * scale, unit=unit, source=f"nvml_gpm:{mid}")
            )
        else:
            absent.append(AbsentDimension(resource, f"NVML GPM metric {mid}: {errors.get(mid, 'not read')}"))
    for resource, ((a, b), unit, scale) in GPM_SUMMED.items():
        if a in values and b in values:
            metrics.append(
                RawMetric(
                    resource=resource,
                    value=(values[a] + values[b]) * scale,
                    unit=unit,
                    source=f"nvml_gpm:{a}+{b}",
                )
            )
        else:
            why = "; ".join(f"{m}: {errors.get(m, 'not read')}" for m in (a, b) if m not in values)
            absent.append(AbsentDimension(resource, f"NVML GPM metrics {why}"))
    return metrics, absent


def _load_pynvml() -> ModuleType:
    try:
        import pynvml
    except ImportError as e:  # pragma: no cover - nvidia-ml-py is a project dependency
        raise SamplerUnavailable(
            "unavailable: nvidia-ml-py is not installed (pip install nvidia-ml-py)"
        ) from e
    return pynvml


class _Device:
    """One GPU: its handle, identity and the GPM snapshot of the previous sample."""

    def __init__(self, nvml: Any, index: int) -> None:
        self.nvml = nvml
        self.index = index
        self.handle = nvml.nvmlDeviceGetHandleByIndex(index)
        self.uuid = as_text(nvml.nvmlDeviceGetUUID(self.handle))
        self.name = as_text(nvml.nvmlDeviceGetName(self.handle))
        self.gpm_reason = ""
        self.prev: Any = None
        self.cur: Any = None
        try:
            supported = bool(nvml.nvmlGpmQueryDeviceSupport(self.handle).isSupportedDevice)
        except nvml.NVMLError as e:
            supported, self.gpm_reason = False, f"NVML GPM query failed: {e}"
        if supported:
            self.prev = nvml.nvmlGpmSampleAlloc()
            self.cur = nvml.nvmlGpmSampleAlloc()
            nvml.nvmlGpmSampleGet(self.handle, self.prev)
        elif not self.gpm_reason:
            self.gpm_reason = f"NVML GPM not supported on {self.name} (needs Hopper or later)"

    def gpm(self) -> tuple[list[RawMetric], list[AbsentDimension]]:
        nvml = self.nvml
        if self.prev is None:
            resources = [r for r, _, _ in GPM_SINGLE.values()] + list(GPM_SUMMED)
            return [], [AbsentDimension(r, self.gpm_reason) for r in resources]
        get = nvml.c_nvmlGpmMetricsGet_t()
        get.version = nvml.NVML_GPM_METRICS_GET_VERSION
        get.numMetrics = len(GPM_IDS)
        get.sample1 = self.prev
        get.sample2 = self.cur
        for i, mid in enumerate(GPM_IDS):
            get.metrics[i].metricId = mid
        try:
            nvml.nvmlGpmSampleGet(self.handle, self.cur)
            nvml.nvmlGpmMetricsGet(get)
        except nvml.NVMLError as e:  # e.g. two snapshots too close together: this window has no GPM values
            resources = [r for r, _, _ in GPM_SINGLE.values()] + list(GPM_SUMMED)
            return [], [AbsentDimension(r, f"NVML GPM read failed: {e}") for r in resources]
        values: dict[int, float] = {}
        errors: dict[int, str] = {}
        for i, mid in enumerate(GPM_IDS):
            m = get.metrics[i]
            if m.nvmlReturn == nvml.NVML_SUCCESS:
                values[mid] = float(m.value)
            else:
                errors[mid] = f"NVML error {m.nvmlReturn}"
        self.prev, self.cur = self.cur, self.prev  # this snapshot starts the next window
        return gpm_metrics(values, errors)

    def close(self) -> None:
        for s in (self.prev, self.cur):
            if s is not None:
                self.nvml.nvmlGpmSampleFree(s)
        self.prev = self.cur = None


def as_text(v: str | bytes) -> str:
    return v.decode() if isinstance(v, bytes) else v


class NvmlSampler:
    """Samples the GPUs at `indices` (default: all) through NVML and GPM.

    Raises SamplerUnavailable when NVML cannot initialise (no driver, no GPU) or an index is missing.
    """

    def __init__(
        self,
        node: str,
        indices: Sequence[int] | None = None,
        *,
        nvml: ModuleType | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.nvml: Any = nvml if nvml is not None else _load_pynvml()
        self.node = node
        self.clock = clock
        try:
            self.nvml.nvmlInit()
        except self.nvml.NVMLError as e:
            raise SamplerUnavailable(
                f"unavailable: no GPU: NVML could not initialise ({e}). Run the telemetry service on a GPU "
                "node, scrape a dcgm-exporter endpoint (DcgmScraper), or replay a recorded trace "
                "(kpilot replay)"
            ) from e
        count = self.nvml.nvmlDeviceGetCount()
        if count == 0:
            self.nvml.nvmlShutdown()
            raise SamplerUnavailable("unavailable: no GPU: NVML initialised but reports 0 devices")
        wanted = list(range(count)) if indices is None else list(indices)
        bad = [i for i in wanted if not 0 <= i < count]
        if bad:
            self.nvml.nvmlShutdown()
            raise SamplerUnavailable(f"GPU index {bad} not present: NVML sees {count} GPU(s), 0..{count - 1}")
        self.devices = [_Device(self.nvml, i) for i in wanted]
        self.last_ts = self.clock()

    def sample(self) -> list[RawSample]:
        ts = self.clock()
        window = ts - self.last_ts
        self.last_ts = ts
        return [self._sample_one(d, ts, window) for d in self.devices]

    def _sample_one(self, d: _Device, ts: float, window: float) -> RawSample:
        nvml, h = self.nvml, d.handle
        util = nvml.nvmlDeviceGetUtilizationRates(h)
        metrics = [
            # utilization.gpu: percent of the last 1/6-1 s (product dependent) in which a kernel ran.
            RawMetric(resource="gpu_util", value=float(util.gpu), unit="pct", source="nvml:utilization"),
            RawMetric(
                resource="sm_clock",
                value=float(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)),
                unit="MHz",
                source="nvml:clock_sm",
            ),
            RawMetric(
                resource="power",
                value=nvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
                unit="W",
                source="nvml:power_usage",
            ),
            RawMetric(
                resource="memory_used",
                value=nvml.nvmlDeviceGetMemoryInfo(h).used / 2**20,
                unit="MiB",
                source="nvml:memory_info",
            ),
        ]
        try:
            mask = nvml.nvmlDeviceGetCurrentClocksEventReasons(h)
        except (AttributeError, nvml.NVMLError):  # drivers before the 535 rename
            mask = nvml.nvmlDeviceGetCurrentClocksThrottleReasons(h)
        gpm, absent = d.gpm()
        return RawSample(
            ts=ts,
            node=self.node,
            gpu=d.uuid,
            gpu_name=d.name,
            window_s=window,
            metrics=metrics + gpm,
            clock_event_reasons=decode_clock_event_reasons(int(mask)),
            absent=absent,
        )

    def close(self) -> None:
        for d in self.devices:
            d.close()
        self.devices = []
        self.nvml.nvmlShutdown()
