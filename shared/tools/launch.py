"""launch_config tool records: occupancy, its limiting resource, waves and the tail effect."""

from __future__ import annotations

from typing import Literal

import msgspec

Limiter = Literal["warps", "blocks", "registers", "shared_mem"]


class LaunchConfigInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    num_warps: int  # warps per block (Triton's num_warps)
    registers_per_thread: int  # ptxas -v "Used N registers"
    shared_mem_bytes: int = 0  # the kernel's static + dynamic shared memory per block (without the 1 KB
    # the driver reserves per block, which is added here)
    grid: list[int]  # blocks per dimension, 1 to 3 entries
    device: str = "H200"  # a key of shared.gpu_facts.GPUS
    # Shared memory carveout per SM in bytes; None = the largest (228 KB on H200), which gives the
    # theoretical best. The driver may pick a smaller one (the ncu fixture saw 32 KB and 132 KB).
    shared_carveout_bytes: int | None = None


class OccupancyLimit(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    resource: Limiter
    blocks_per_sm: int  # blocks this resource alone allows on one SM
    detail: str  # the arithmetic, e.g. "4 * floor(16384 / 1024) = 64 warps / 4 warps per block"


class LaunchConfigOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    device: str
    sm_count: int
    blocks_per_sm: int
    active_warps_per_sm: int
    occupancy: float  # active warps / max warps per SM, 0..1 (ncu's theoretical occupancy)
    limiting: list[Limiter]  # every resource whose limit equals blocks_per_sm
    limits: list[OccupancyLimit]
    registers_allocated_per_thread: int  # after the allocation granularity
    shared_allocated_per_block: int  # bytes, with the driver's reserve and granularity
    shared_carveout_bytes: int
    grid_blocks: int
    blocks_per_wave: int  # blocks_per_sm * sm_count
    waves: float | None  # grid_blocks / blocks_per_wave (ncu's launch__waves_per_multiprocessor); None
    # when no block fits
    full_waves: int
    tail_blocks: int  # blocks in the last, partial wave (0 = no partial wave)
    # Fraction of SM slots busy over all waves, waves / ceil(waves): 1.0 = no tail loss.
    wave_efficiency: float
    small_grid: bool  # waves < 1: fewer blocks than one wave fills (ncu's "small grid" rule)
    notes: list[str] = []
