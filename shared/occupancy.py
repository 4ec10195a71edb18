"""Theoretical blocks per SM of one launch: GPU.md's occupancy formula. Pure.

blocks/SM = min(floor(64 / W), 32, floor(4 * floor(16384 / roundup(R * 32, 256)) / W),
                floor(C / roundup(S + 1024, 128)))
for W warps per block, R registers per thread, S shared bytes per block and carveout C (the numbers are
H200's, read from GpuFacts). toolrunner's launch_config tool reports it with the arithmetic (checked against
ncu's launch__occupancy_limit_* rows of the H200 fixture, tests/toolrunner/test_launch_config.py); the
planner's config search prunes and ranks with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.gpu_facts import GpuFacts


def roundup(x: int, unit: int) -> int:
    return -(-x // unit) * unit


@dataclass(frozen=True)
class BlockLimits:
    """Blocks per SM each resource alone allows, and the allocations behind them."""

    warps: int  # floor(max warps per SM / W)
    blocks: int  # the hardware's blocks-per-SM cap
    registers: int  # register_warps // W
    shared_mem: int  # floor(carveout / shared_block_bytes)
    warp_registers: int  # registers one warp is allocated: roundup(R * 32, alloc unit)
    register_warps: int  # warps the register file holds at that allocation
    shared_block_bytes: int  # roundup(S + driver reserve, alloc unit)
    carveout: int  # shared bytes per SM the limit was computed for

    @property
    def blocks_per_sm(self) -> int:
        return min(self.warps, self.blocks, self.registers, self.shared_mem)


def block_limits(
    num_warps: int, registers_per_thread: int, shared_bytes: int, gpu: GpuFacts, carveout: int | None = None
) -> BlockLimits:
    """The formula's four terms. `carveout` None = the largest (gpu.shared_per_sm). Needs num_warps >= 1
    and registers_per_thread >= 1 (launch_config's check_launch says so to a caller)."""
    c = int(gpu.shared_per_sm.value) if carveout is None else carveout
    parts = int(gpu.register_subpartitions.value)
    warp_regs = roundup(registers_per_thread * 32, int(gpu.register_alloc_unit.value))
    reg_warps = parts * ((int(gpu.registers_per_sm.value) // parts) // warp_regs)
    reserve, unit = int(gpu.shared_reserved_per_block.value), int(gpu.shared_alloc_unit.value)
    smem_block = roundup(shared_bytes + reserve, unit)
    return BlockLimits(
        warps=int(gpu.max_warps_per_sm.value) // num_warps,
        blocks=int(gpu.max_blocks_per_sm.value),
        registers=reg_warps // num_warps,
        shared_mem=c // smem_block,
        warp_registers=warp_regs,
        register_warps=reg_warps,
        shared_block_bytes=smem_block,
        carveout=c,
    )


def blocks_per_sm(
    num_warps: int, registers_per_thread: int, shared_bytes: int, gpu: GpuFacts, carveout: int | None = None
) -> int:
    return block_limits(num_warps, registers_per_thread, shared_bytes, gpu, carveout).blocks_per_sm
