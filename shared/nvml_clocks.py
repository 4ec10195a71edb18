"""NVML clock-event reason bits (nvml.h nvmlClocksEventReason*; pynvml nvmlClocksEventReason* and the older
nvmlClocksThrottleReason*), shared by telemetry (samplers, the throttling detector) and toolrunner (dropping
timing samples taken under capping). Pure.
"""

from __future__ import annotations

CLOCK_EVENT_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# Thermal or power capping, which lowers the clock of a loaded GPU (GPU.md: drop timing samples taken under
# these). Idle, application clocks, sync boost and display clocks do not slow a running kernel below what
# was asked for.
CAPPING_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
CAPPING_REASONS: frozenset[str] = frozenset(n for b, n in CLOCK_EVENT_BITS.items() if b & CAPPING_MASK)


def decode_clock_event_reasons(mask: int) -> list[str]:
    """Names of the set bits, lowest first; an unknown bit is kept as "bit_0x...". 0 -> []."""
    names = [name for bit, name in CLOCK_EVENT_BITS.items() if mask & bit]
    unknown = mask & ~sum(CLOCK_EVENT_BITS)
    bit = 1
    while unknown:
        if unknown & bit:
            names.append(f"bit_{bit:#x}")
            unknown &= ~bit
        bit <<= 1
    return names
