"""Roofline classification from the task's FLOP/byte formulas and the device's measured ceilings."""

from __future__ import annotations

from shared.tools.decompose import DeviceFacts, Roofline

_TENSOR_DTYPES = ("bfloat16", "float16", "bf16", "f16", "fp16")


def peak_flops(device: DeviceFacts, dtype: str, tensor_cores: bool) -> float:
    """bf16/fp16 on tensor cores use the measured 784 TFLOP/s; anything else the fp32 CUDA-core peak."""
    if tensor_cores and (dtype in _TENSOR_DTYPES or not dtype):
        return device.bf16_flops_per_s
    return device.fp32_flops_per_s


def classify(
    flops: float | None,
    bytes_moved: float | None,
    measured_s: float | None,
    dtype: str,
    tensor_cores: bool,
    device: DeviceFacts,
) -> Roofline:
    if flops is None or bytes_moved is None or bytes_moved <= 0:
        return Roofline(
            bound="unknown",
            flops=flops,
            bytes_moved=bytes_moved,
            measured_s=measured_s,
            note="no FLOP/byte formula at this shape: roofline not classified",
        )
    peak = peak_flops(device, dtype, tensor_cores)
    intensity = flops / bytes_moved
    ridge = peak / device.copy_bytes_per_s
    floor = max(flops / peak, bytes_moved / device.copy_bytes_per_s)
    frac = floor / measured_s if measured_s else None
    note = "" if measured_s else "not measured: no GPU time given (roofline floor only)"
    return Roofline(
        bound="memory" if intensity < ridge else "compute",
        flops=flops,
        bytes_moved=bytes_moved,
        intensity=intensity,
        ridge=ridge,
        peak_flops_per_s=peak,
        floor_s=floor,
        measured_s=measured_s,
        fraction_of_roof=frac,
        note=note,
    )
