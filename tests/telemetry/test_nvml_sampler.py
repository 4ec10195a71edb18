from __future__ import annotations

import os
import time
from pathlib import Path

import msgspec
import pytest

from services.telemetry.nvml_sampler import NvmlSampler, gpm_metrics
from services.telemetry.records import RawSample, SamplerUnavailable
from shared.nvml_clocks import decode_clock_event_reasons


def _has_nvml_gpu() -> bool:
    try:
        NvmlSampler("probe").close()
    except SamplerUnavailable:
        return False
    return True


def test_decode_clock_event_reasons() -> None:
    assert decode_clock_event_reasons(0) == []
    assert decode_clock_event_reasons(0x1) == ["gpu_idle"]
    assert decode_clock_event_reasons(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert decode_clock_event_reasons(0x800) == ["bit_0x800"]  # a bit newer than this table is kept


def test_gpm_conversion_sums_links_and_reports_missing_ids() -> None:
    # MiB/s for 20/21 and 60/61 -> GB/s summed; 2/3/5/10 are percentages kept as they are.
    metrics, absent = gpm_metrics(
        {2: 91.5, 3: 40.0, 5: 12.0, 10: 35.0, 20: 1000.0, 21: 1000.0},
        {60: "NVML error 3", 61: "NVML error 3"},
    )
    by = {m.resource: m for m in metrics}
    assert by["sm_active"].value == 91.5 and by["sm_active"].source == "nvml_gpm:2"
    assert by["tensor_core_util"].source == "nvml_gpm:5"
    assert by["pcie_bw"].value == pytest.approx(2000 * 1048576 / 1e9)
    assert by["pcie_bw"].unit == "GB/s"
    assert "nvlink_bw" not in by
    (nv,) = absent
    assert nv.resource == "nvlink_bw" and "60: NVML error 3" in nv.reason


@pytest.mark.skipif(_has_nvml_gpu(), reason="this machine has a GPU; the no-GPU path cannot be exercised")
def test_without_gpu_the_constructor_raises_and_never_returns_zeros() -> None:
    with pytest.raises(SamplerUnavailable, match="no GPU"):
        NvmlSampler("n0")


@pytest.mark.gpu
def test_samples_a_real_gpu() -> None:
    s = NvmlSampler("gpu-test")
    try:
        time.sleep(0.5)  # GPM metrics need two snapshots at least ~100 ms apart
        samples = s.sample()
        time.sleep(0.5)
        samples += s.sample()
    finally:
        s.close()
    assert samples and all(x.gpu.startswith("GPU-") for x in samples)
    first = samples[0]
    for r in ("gpu_util", "sm_clock", "power", "memory_used"):
        assert first.value(r) is not None, r
    assert first.clock_event_reasons is not None
    assert first.value("sm_clock") > 0 and first.value("power") > 0  # type: ignore[operator]
    if "H200" in first.gpu_name or "H100" in first.gpu_name:
        assert first.value("sm_active") is not None, first.absent  # GPM answers on Hopper (h200-probe)
    out = os.environ.get("KPILOT_FIXTURE_OUT")
    if out:
        path = Path(out) / "telemetry" / "nvml_samples.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(msgspec.json.encode(x) + b"\n" for x in samples))
    assert all(isinstance(x, RawSample) for x in samples)
