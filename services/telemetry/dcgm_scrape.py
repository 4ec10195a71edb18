"""Optional device sampler: scrape a dcgm-exporter endpoint (Prometheus text format).

dcgm-exporter (github.com/NVIDIA/dcgm-exporter) serves one metric family per DCGM field, named after the
field (DCGM_FI_PROF_SM_ACTIVE, ...), with one series per GPU labelled gpu (index), UUID, pci_bus_id,
device, modelName and Hostname, on :9400/metrics by default. The DCP (profiling) fields must be enabled in
the exporter's collector CSV (etc/dcp-metrics-included.csv ships most of them; DCGM_FI_PROF_SM_ACTIVE and
DCGM_FI_PROF_SM_OCCUPANCY are commented out there). The text is parsed by prometheus_client's parser.
"""

from __future__ import annotations

import math
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from prometheus_client.parser import text_string_to_metric_families

from services.telemetry.records import RawMetric, RawSample, SamplerUnavailable
from shared.messages import AbsentDimension, Resource
from shared.nvml_clocks import decode_clock_event_reasons

DEFAULT_URL = "http://localhost:9400/metrics"

# DCGM field name -> (field id, resource, unit, scale). PROF ratios are 0-1, we store pct (0-100);
# PROF PCIe/NVLink fields are bytes per second, we store GB/s.
FIELDS: dict[str, tuple[int, Resource, str, float]] = {
    "DCGM_FI_PROF_SM_ACTIVE": (1002, "sm_active", "pct", 100.0),
    "DCGM_FI_PROF_SM_OCCUPANCY": (1003, "occupancy", "pct", 100.0),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": (1004, "tensor_core_util", "pct", 100.0),
    "DCGM_FI_PROF_DRAM_ACTIVE": (1005, "dram_bandwidth", "pct_of_peak", 100.0),
    "DCGM_FI_DEV_SM_CLOCK": (100, "sm_clock", "MHz", 1.0),
    "DCGM_FI_DEV_POWER_USAGE": (155, "power", "W", 1.0),
    "DCGM_FI_DEV_GPU_UTIL": (203, "gpu_util", "pct", 1.0),
    "DCGM_FI_DEV_FB_USED": (252, "memory_used", "MiB", 1.0),
}
# Bandwidths come as tx and rx fields; we publish their sum as one dimension, like the NVML sampler.
SUMMED: dict[Resource, tuple[tuple[str, int], tuple[str, int]]] = {
    "pcie_bw": (("DCGM_FI_PROF_PCIE_TX_BYTES", 1009), ("DCGM_FI_PROF_PCIE_RX_BYTES", 1010)),
    "nvlink_bw": (("DCGM_FI_PROF_NVLINK_TX_BYTES", 1011), ("DCGM_FI_PROF_NVLINK_RX_BYTES", 1012)),
}
# Field 112 was renamed in DCGM 3.3 (CLOCK_THROTTLE_REASONS -> CLOCKS_EVENT_REASONS); accept both.
CLOCK_EVENT_FIELDS = ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")

# DCGM marks "no value" with blank sentinels instead of omitting the series: DCGM_INT64_BLANK is
# 0x7ffffffffffffff0 (9223372036854775792; the exporter README shows ...794 for an unsupported field) and
# DCGM_FP64_BLANK is 140737488355328.0 (2^47); anything at or above them is "not available".
_FP64_BLANK = 140737488355328.0


def _is_blank(v: float) -> bool:
    return math.isnan(v) or v >= _FP64_BLANK  # at/above both blank sentinels


class _Gpu:
    def __init__(self) -> None:
        self.values: dict[str, float] = {}
        self.blank: set[str] = set()
        self.labels: dict[str, str] = {}


def parse_exposition(text: str, *, node: str = "", ts: float | None = None) -> list[RawSample]:
    """Parse dcgm-exporter's /metrics text into one RawSample per GPU (ordered by the `gpu` label).

    `node` overrides the Hostname label (empty: use Hostname, else "unknown"). Raises ValueError on text
    that is not Prometheus exposition format, naming the parser's complaint.
    """
    when = time.time() if ts is None else ts
    gpus: dict[str, _Gpu] = {}
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError as e:
        raise ValueError(
            f"not Prometheus text exposition format (is the URL dcgm-exporter's /metrics?): {e}"
        ) from e
    wanted = set(FIELDS) | {f for pair in SUMMED.values() for f, _ in pair} | set(CLOCK_EVENT_FIELDS)
    for fam in families:
        for s in fam.samples:
            if s.name not in wanted:
                continue
            key = s.labels.get("UUID") or s.labels.get("gpu")
            if key is None:
                continue  # an exporter-level series, not a GPU's
            g = gpus.setdefault(key, _Gpu())
            g.labels = s.labels
            if _is_blank(float(s.value)):
                g.blank.add(s.name)
            else:
                g.values[s.name] = float(s.value)
    out = [_to_sample(key, g, node, when) for key, g in gpus.items()]
    out.sort(key=lambda r: int(gpus[r.gpu].labels.get("gpu", "0")) if r.gpu in gpus else 0)
    return out


def _why(g: _Gpu, field: str) -> str:
    if field in g.blank:
        return (
            f"dcgm-exporter returned DCGM's blank value for {field} "
            "(not supported on this GPU or not watched)"
        )
    return f"dcgm-exporter does not export {field} (enable it in the exporter's collector CSV)"


def _to_sample(key: str, g: _Gpu, node: str, ts: float) -> RawSample:
    metrics: list[RawMetric] = []
    absent: list[AbsentDimension] = []
    for field, (fid, resource, unit, scale) in FIELDS.items():
        if field in g.values:
            metrics.append(
                RawMetric(resource=resource, value=g.values[field] * scale, unit=unit, source=f"dcgm:{fid}")
            )
        else:
            absent.append(AbsentDimension(resource, _why(g, field)))
    for resource, ((tx, tx_id), (rx, rx_id)) in SUMMED.items():
        if tx in g.values and rx in g.values:
            metrics.append(
                RawMetric(
                    resource=resource,
                    value=(g.values[tx] + g.values[rx]) / 1e9,
                    unit="GB/s",
                    source=f"dcgm:{tx_id}+{rx_id}",
                )
            )
        else:
            absent.append(
                AbsentDimension(resource, "; ".join(_why(g, f) for f in (tx, rx) if f not in g.values))
            )
    reasons: list[str] | None = None
    for field in CLOCK_EVENT_FIELDS:
        if field in g.values:
            reasons = decode_clock_event_reasons(int(g.values[field]))
            break
    return RawSample(
        ts=ts,
        node=node or g.labels.get("Hostname", "") or "unknown",
        gpu=key,
        gpu_name=g.labels.get("modelName", ""),
        metrics=metrics,
        clock_event_reasons=reasons,
        absent=absent,
    )


def fetch_text(url: str, timeout_s: float) -> str:
    """GET the exposition; an unreachable exporter is SamplerUnavailable with the URL and the fix."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return resp.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
        raise SamplerUnavailable(
            f"unavailable: dcgm-exporter not reachable at {url} ({e}); start it (docker run -p 9400:9400 "
            "nvcr.io/nvidia/k8s/dcgm-exporter:...) or use the NVML sampler"
        ) from e


class DcgmScraper:
    """A Sampler over a dcgm-exporter endpoint. dcgm-exporter refreshes every 30 s by default
    (its -c/--collect-interval is in ms), so scraping faster repeats values."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        node: str = "",
        timeout_s: float = 5.0,
        fetch: Callable[[str, float], str] = fetch_text,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.url = url
        self.node = node
        self.timeout_s = timeout_s
        self.fetch = fetch
        self.clock = clock

    def sample(self) -> list[RawSample]:
        text = self.fetch(self.url, self.timeout_s)
        return parse_exposition(text, node=self.node, ts=self.clock())

    def close(self) -> None:
        pass
