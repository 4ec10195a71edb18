"""Exact theoretical occupancy, waves and tail effect of one launch (GPU.md's formula). Pure.

The formula itself is shared/occupancy.py (the planner's config search uses it too); this module checks a
request, reports each limit with its arithmetic, and adds waves and the tail effect. Checked against ncu's
launch__occupancy_limit_* rows of the H200 fixture (tests/toolrunner/test_launch_config.py).
"""

from __future__ import annotations

import math

from shared.gpu_facts import GpuFacts
from shared.occupancy import block_limits
from shared.tools.launch import LaunchConfigInput, LaunchConfigOutput, Limiter, OccupancyLimit


def check_launch(req: LaunchConfigInput, gpu: GpuFacts) -> list[str]:
    """Problems with the request, each saying what is allowed; empty when it can be computed."""
    problems = []
    max_warps_block = int(gpu.max_threads_per_block.value) // 32
    if not 1 <= req.num_warps <= max_warps_block:
        problems.append(
            f"num_warps={req.num_warps}: a block holds 1 to {max_warps_block} warps "
            f"({int(gpu.max_threads_per_block.value)} threads) on {gpu.name}"
        )
    if not 1 <= req.registers_per_thread <= int(gpu.max_registers_per_thread.value):
        problems.append(
            f"registers_per_thread={req.registers_per_thread}: must be 1 to "
            f"{int(gpu.max_registers_per_thread.value)} (take it from ptxas -v / ptxas_info)"
        )
    if req.shared_mem_bytes < 0:
        problems.append(f"shared_mem_bytes={req.shared_mem_bytes}: must be >= 0")
    elif req.shared_mem_bytes > gpu.shared_per_block_optin.value:
        problems.append(
            f"shared_mem_bytes={req.shared_mem_bytes}: a block may use at most "
            f"{int(gpu.shared_per_block_optin.value)} bytes on {gpu.name}; the launch would fail"
        )
    if not 1 <= len(req.grid) <= 3 or any(g < 1 for g in req.grid):
        problems.append(f"grid={req.grid}: give 1 to 3 positive block counts, e.g. [1024] or [64, 64]")
    c = req.shared_carveout_bytes
    if c is not None and c not in gpu.shared_carveouts:
        problems.append(f"shared_carveout_bytes={c}: {gpu.name} carveouts are {list(gpu.shared_carveouts)}")
    return problems


def launch_config(req: LaunchConfigInput, gpu: GpuFacts) -> LaunchConfigOutput:
    """Occupancy and waves for a request that `check_launch` accepted."""
    problems = check_launch(req, gpu)
    if problems:
        raise ValueError("; ".join(problems))
    w, r, s = req.num_warps, req.registers_per_thread, req.shared_mem_bytes
    b = block_limits(w, r, s, gpu, req.shared_carveout_bytes)
    carveout, smem_block = b.carveout, b.shared_block_bytes
    warp_regs, reg_warps = b.warp_registers, b.register_warps
    max_warps = int(gpu.max_warps_per_sm.value)
    parts = int(gpu.register_subpartitions.value)
    regs_per_part = int(gpu.registers_per_sm.value) // parts
    limits = [
        OccupancyLimit(
            resource="warps",
            blocks_per_sm=b.warps,
            detail=f"floor({max_warps} warps / {w} warps per block)",
        ),
        OccupancyLimit(
            resource="blocks",
            blocks_per_sm=b.blocks,
            detail=f"{int(gpu.max_blocks_per_sm.value)} blocks per SM",
        ),
        OccupancyLimit(
            resource="registers",
            blocks_per_sm=b.registers,
            detail=f"{parts} * floor({regs_per_part} / roundup({r} * 32, "
            f"{int(gpu.register_alloc_unit.value)}) = {warp_regs}) = {reg_warps} warps "
            f"/ {w} warps per block",
        ),
        OccupancyLimit(
            resource="shared_mem",
            blocks_per_sm=b.shared_mem,
            detail=f"floor({carveout} carveout / roundup({s} + "
            f"{int(gpu.shared_reserved_per_block.value)}, "
            f"{int(gpu.shared_alloc_unit.value)}) = {smem_block})",
        ),
    ]
    blocks = min(lim.blocks_per_sm for lim in limits)
    limiting: list[Limiter] = [lim.resource for lim in limits if lim.blocks_per_sm == blocks]
    sms = int(gpu.sm_count.value)
    grid_blocks = math.prod(req.grid)
    per_wave = blocks * sms
    notes: list[str] = []
    waves: float | None
    if blocks == 0:
        notes.append(f"no block fits on an SM ({', '.join(limiting)} allow 0): the launch would fail")
        waves, full, tail, eff = None, 0, grid_blocks, 0.0
    else:
        waves = grid_blocks / per_wave
        full, tail = divmod(grid_blocks, per_wave)
        eff = waves / math.ceil(waves)
    if req.shared_carveout_bytes is None and s > 0:
        notes.append(
            f"assumed the largest carveout ({carveout} bytes); the driver may pick a smaller one, "
            "which lowers only the shared-memory limit"
        )
    return LaunchConfigOutput(
        device=gpu.name,
        sm_count=sms,
        blocks_per_sm=blocks,
        active_warps_per_sm=blocks * w,
        occupancy=blocks * w / max_warps,
        limiting=limiting,
        limits=limits,
        registers_allocated_per_thread=warp_regs // 32,
        shared_allocated_per_block=smem_block,
        shared_carveout_bytes=carveout,
        grid_blocks=grid_blocks,
        blocks_per_wave=per_wave,
        waves=waves,
        full_waves=full,
        tail_blocks=tail,
        wave_efficiency=eff,
        small_grid=waves is not None and waves < 1,
        notes=notes,
    )
