"""Builders for telemetry test inputs: samples whose values a test states outright.

These feed the pure encoder and detectors (logic under test), not parsers; parser tests use the recorded
fixtures in tests/telemetry/fixtures/.
"""

from __future__ import annotations

from services.telemetry.records import RawMetric, RawSample
from shared.messages import KernelShare

UNITS = {
    "sm_active": "pct",
    "gpu_util": "pct",
    "tensor_core_util": "pct",
    "occupancy": "pct",
    "dram_bandwidth": "pct_of_peak",
    "l2_hit_rate": "pct",
    "sm_clock": "MHz",
    "power": "W",
    "pcie_bw": "GB/s",
    "nvlink_bw": "GB/s",
    "memory_used": "MiB",
}


def sample(ts: float, gpu: str = "GPU-0", reasons: list[str] | None = None, **values: float) -> RawSample:
    return RawSample(
        ts=ts,
        node="n0",
        gpu=gpu,
        gpu_name="NVIDIA H200",
        window_s=15.0,
        metrics=[RawMetric(resource=k, value=v, unit=UNITS[k], source="test") for k, v in values.items()],
        clock_event_reasons=reasons,
    )


GEMM = [KernelShare("matmul_kernel", 0.8, 1000, 120.0), KernelShare("add_kernel", 0.2, 1000, 30.0)]
ADD = [KernelShare("add_kernel", 0.9, 5000, 40.0)]
