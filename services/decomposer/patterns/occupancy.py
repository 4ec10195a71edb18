"""Registers, occupancy, grid and launch patterns: spills, limiters, small grids, tails, L2 order."""

from __future__ import annotations

import math

from services.decomposer.evidence import Evidence
from services.decomposer.patterns.base import (
    Match,
    Pattern,
    _at,
    _is_dot_kernel,
    _locs,
)

PATTERNS: list[Pattern] = []  # this family's table, in rank-tie order; each entry follows its function


def register_spills(ev: Evidence) -> Match | None:
    p = ev.ptxas
    spill = (p.spill_stores + p.spill_loads) if p is not None else 0
    local = [r for r in ev.sass_lines if r.local_accesses]
    # with ptxas info, only spill bytes count (a printf or local array also uses LDL/STL on its stack frame)
    if spill == 0 and (p is not None or not local):
        return None
    n_local = sum(r.local_accesses for r in local)
    ev_ = []
    if p is not None:
        ev_.append(
            f"ptxas: {p.registers} registers, {p.spill_stores} B spill stores, "
            f"{p.spill_loads} B spill loads, {p.stack_frame} B stack"
        )
    if local:
        ev_.append(f"SASS: {n_local} LDL/STL local-memory instructions")
    locs = [f"{r.file}:{r.line}" for r in local[:3]] + [f"sass:{r.first_addr}" for r in local[:3]]
    return Match(min(1.0, 0.5 + spill / 4096), locs, ev_)


def register_spills_dyn(ev: Evidence) -> Match | None:
    loc_ = (ev.ncu("smsp__sass_inst_executed_op_local_ld.sum") or 0) + (
        ev.ncu("smsp__sass_inst_executed_op_local_st.sum") or 0
    )
    mem = ev.ncu("smsp__sass_inst_executed_op_memory.sum", "smsp__inst_executed_op_memory.sum")
    if not mem or loc_ / mem <= 0.10:  # ncu rule: local-memory > 10 % of memory instructions
        return None
    return Match(
        min(1.0, 0.5 + loc_ / mem),
        [],
        [(f"ncu: local-memory instructions {100 * loc_ / mem:.0f} % of memory instructions (rule: > 10 %)")],
        "high",
    )


PATTERNS.append(
    Pattern(
        "register_spills",
        "registers spill to local memory",
        "high",
        ("set_constexpr", "set_num_warps", "set_num_stages", "set_maxnreg"),
        register_spills,
        register_spills_dyn,
        requires=("ptxas",),
    )
)


def local_memory_array(ev: Evidence) -> Match | None:
    """A stack frame with no spills and LDL/STL in SASS: a per-thread array indexed at run time (CUDA C++;
    Triton's only stack user is device printf, excluded)."""
    p = ev.ptxas
    local = [r for r in ev.sass_lines if r.local_accesses]
    if p is None or p.stack_frame == 0 or p.spill_stores + p.spill_loads > 0 or not local:
        return None
    if any(op.name in ("tt.print", "tt.assert") for op in ev.mod.ops):
        return None
    return Match(
        0.5,
        [f"{r.file}:{r.line}" for r in local[:3]],
        [f"ptxas: {p.stack_frame} B stack frame, 0 B spills; SASS LDL/STL on {len(local)} line(s)"],
    )


PATTERNS.append(
    Pattern(
        "local_memory_array",
        "a per-thread array indexed at run time lives in local memory (stack frame, no spills)",
        "medium",
        ("source_edit",),
        local_memory_array,
        requires=("ptxas", "sass"),
    )
)


def _occ(ev: Evidence, limiter: str) -> Match | None:
    if _is_dot_kernel(ev) or ev.theoretical_occupancy is None or ev.occupancy_limiter != limiter:
        return None
    if ev.theoretical_occupancy > 0.5:
        return None
    occ = ev.theoretical_occupancy
    detail = {
        "registers": f"{ev.ptxas.registers if ev.ptxas else '?'} registers/thread",
        "shared memory": f"{ev.shared_bytes} B shared/block"
        + (" (estimated)" if ev.shared_estimated else ""),
        "blocks": f"{ev.mod.num_warps} warps/block x 32 blocks/SM",
    }.get(limiter, limiter)
    return Match(
        round(0.6 * (1 - occ), 3),
        [],
        [
            (
                f"theoretical occupancy {100 * occ:.0f} % "
                f"({ev.blocks_per_sm} blocks x {ev.mod.num_warps} warps), "
                f"limited by {detail}"
            )
        ],
    )


def occupancy_limited_by_registers(ev: Evidence) -> Match | None:
    return _occ(ev, "registers")


PATTERNS.append(
    Pattern(
        "occupancy_limited_by_registers",
        "registers per thread cap resident warps at or below 50 %",
        "medium",
        ("set_maxnreg", "set_constexpr", "set_num_warps"),
        occupancy_limited_by_registers,
        requires=("ptxas",),
    )
)


def occupancy_limited_by_shared_memory(ev: Evidence) -> Match | None:
    return _occ(ev, "shared memory")


PATTERNS.append(
    Pattern(
        "occupancy_limited_by_shared_memory",
        "shared memory per block caps resident warps at or below 50 %",
        "medium",
        ("set_num_stages", "set_constexpr"),
        occupancy_limited_by_shared_memory,
    )
)


def occupancy_limited_by_block_size(ev: Evidence) -> Match | None:
    return _occ(ev, "blocks")


PATTERNS.append(
    Pattern(
        "occupancy_limited_by_block_size",
        "blocks too small: the 32-blocks/SM limit caps warps",
        "medium",
        ("set_num_warps", "set_constexpr"),
        occupancy_limited_by_block_size,
        fix_transform="launch_bounds",
    )
)


def idle_threads_tile_smaller_than_block(ev: Evidence) -> Match | None:
    sizes = [math.prod(a.shape) for a in ev.accesses if a.shape and a.kind != "atomic"]
    sizes += [math.prod(d.op.result_type.shape) for d in ev.dots if d.op.result_type is not None]
    if not sizes or ev.dots:
        return None
    biggest = max(sizes)
    if biggest >= ev.threads:
        return None
    return Match(
        round(1 - biggest / ev.threads, 3),
        [],
        [
            (
                f"largest tile has {biggest} elements but the block has {ev.threads} threads "
                f"({ev.mod.num_warps} warps): {ev.threads - biggest} threads hold duplicates"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "idle_threads_tile_smaller_than_block",
        "the tile has fewer elements than the block has threads",
        "high",
        ("set_num_warps", "set_constexpr"),
        idle_threads_tile_smaller_than_block,
        fix_transform="rows_per_program",
    )
)


def small_grid(ev: Evidence) -> Match | None:
    if ev.programs is None or ev.programs >= ev.facts.device.sms:
        return None
    return Match(
        round(0.9 * (1 - ev.programs / ev.facts.device.sms), 3),
        [],
        [
            (
                f"grid of {ev.programs} programs on {ev.facts.device.sms} SMs: waves per SM < 1 "
                "(ncu 'small grid')"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "small_grid",
        "fewer programs than SMs (waves per SM < 1)",
        "high",
        ("set_constexpr", "set_grid"),
        small_grid,
        requires=("grid",),
        fix_transform="split_k",
    )
)


def tail_effect(ev: Evidence) -> Match | None:
    w = ev.waves
    if w is None or w < 1 or w > 8:
        return None
    full = math.ceil(w)
    idle = (full - w) / full
    if idle < 0.2:
        return None
    return Match(
        round(idle, 3),
        [],
        [
            (
                f"{w:.2f} waves ({ev.programs} programs, {ev.blocks_per_sm} blocks/SM "
                f"x {ev.facts.device.sms} SMs): the last wave leaves "
                f"{100 * idle:.0f} % of the machine idle"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "tail_effect",
        "the last wave of programs leaves much of the GPU idle",
        "medium",
        ("set_constexpr", "set_grid"),
        tail_effect,
        requires=("grid",),
    )
)


LAUNCH_FLOOR_S = 5e-6  # a kernel whose roofline floor is < 5 us is dominated by launch latency (few us)


def launch_bound_tiny_kernel(ev: Evidence) -> Match | None:
    f = ev.facts
    if f.bytes_moved is None and f.flops is None:
        return None
    t_mem = (f.bytes_moved or 0) / f.device.copy_bytes_per_s
    t_cmp = (f.flops or 0) / f.device.bf16_flops_per_s
    floor = max(t_mem, t_cmp)
    if floor >= LAUNCH_FLOOR_S:
        return None
    return Match(
        0.95,
        [],
        [
            (
                f"roofline floor {floor * 1e6:.2f} us < {LAUNCH_FLOOR_S * 1e6:.0f} us: "
                "launch overhead dominates; fuse with neighbours or batch launches"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "launch_bound_tiny_kernel",
        "so little work that launch latency dominates",
        "high",
        ("source_edit", "set_grid"),
        launch_bound_tiny_kernel,
        requires=("costs",),
        fix_transform="rows_per_program",
        cost_in_kernel=False,
        outside_saves_s=LAUNCH_FLOOR_S,
    )
)


def poor_l2_reuse_no_grouped_order(ev: Evidence) -> Match | None:
    # matmul-like: one dot per K-loop iteration, both operands streamed in the loop (attention re-reads K/V
    # per q block of the same head, which program_id(0) already keeps together)
    if not any(len(lp.dots) == 1 and len(lp.sync_loads) + lp.async_copies + lp.tma >= 2 for lp in ev.loops):
        return None
    if ev.programs is not None and ev.programs <= ev.facts.device.sms:
        return None
    ops = ev.mod.ops
    pid_ops = [op for op in ops if op.name == "tt.get_program_id"]
    grouped = False
    for op in ops:
        if op.name == "arith.minsi" and not op.loops:
            grouped = True
    if grouped or not pid_ops:
        return None
    axes = {op.text.strip().split()[0] for op in pid_ops}
    return Match(
        0.3,
        [x for op in pid_ops for x in _at(ev, op)],
        [
            (
                f"tile order comes straight from program_id ({', '.join(sorted(axes))}), no grouped "
                "(GROUP_M) swizzle: consecutive programs share no A/B tiles in L2"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "poor_l2_reuse_no_grouped_order",
        "matmul tiles scheduled row-major: no grouped (GROUP_M) order for L2 reuse",
        "medium",
        ("source_edit", "set_constexpr"),
        poor_l2_reuse_no_grouped_order,
        fix_transform="grouped_order",
    )
)


# ---------------------------------------------------------------- added with issue 22

TINY_TILE = 256  # elements per program at or below which per-program overhead shows


def tiny_tile_per_program(ev: Evidence) -> Match | None:
    if ev.dots or ev.loops or ev.programs is None or ev.programs < 8 * ev.facts.device.sms:
        return None
    sizes = [math.prod(a.shape) for a in ev.accesses if a.shape and a.kind != "atomic"]
    if not sizes or max(sizes) > TINY_TILE or max(sizes) < ev.threads:
        return None  # below the block size: idle_threads_tile_smaller_than_block says it
    return Match(
        0.3,
        _locs(ev, [a for a in ev.accesses if a.shape]),
        [
            (
                f"each of {ev.programs} programs handles {max(sizes)} elements ({max(sizes) // max(1, ev.threads)} per "
                "thread): block scheduling and index setup are paid per tiny tile; a bigger BLOCK (or several per "
                "program) amortises them"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "tiny_tile_per_program",
        "each program handles a tiny tile (<= 256 elements) over a huge grid",
        "medium",
        ("set_constexpr",),
        tiny_tile_per_program,
        requires=("grid",),
        fix_transform="rows_per_program",
    )
)


def block_not_multiple_of_warp(ev: Evidence) -> Match | None:
    """CUDA C++: a block whose thread count is not a multiple of 32 (from .maxntid or the launch): its last
    warp runs with idle lanes on every instruction. Triton launches whole warps (num_warps)."""
    t = getattr(ev, "threads", None)
    if not t or t % 32 == 0 or getattr(ev, "mod", None) is not None:
        return None
    idle = (32 - t % 32) / (32 * -(-t // 32))
    return Match(
        round(min(0.9, 2 * idle), 3),
        [],
        [
            f"{t} threads per block = {t // 32} full warps + {t % 32} lanes: {100 * idle:.0f} % of lanes idle; use a multiple of 32"
        ],
    )


PATTERNS.append(
    Pattern(
        "block_not_multiple_of_warp",
        "threads per block not a multiple of 32: the last warp of each block runs partly empty",
        "medium",
        ("source_edit",),
        block_not_multiple_of_warp,
        requires=("grid",),
    )
)
