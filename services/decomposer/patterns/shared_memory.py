"""Shared-memory patterns: bank conflicts, layout conversions through shared memory."""

from __future__ import annotations

from services.decomposer.evidence import Evidence, elem_bytes
from services.decomposer.patterns.base import (
    Match,
    Pattern,
    _at,
    _ptx_locs,
)
from shared.parsers.ttgir import resolve_layout

PATTERNS: list[Pattern] = []  # this family's table, in rank-tie order; each entry follows its function


def shared_bank_conflicts(ev: Evidence) -> Match | None:
    hits = []
    for op in ev.mod.ops:
        if op.name != "ttg.local_alloc" or op.result_type is None or len(op.result_type.shape) < 2:
            continue
        base, _ = resolve_layout(op.result_type.layout, ev.layouts)
        if base is None or base.kind != "swizzled_shared":
            continue
        row = op.result_type.shape[-1] * elem_bytes(op.result_type.elem)
        if (base.max_phase or 1) == 1 and row % 128 == 0:
            hits.append(op)
    if not hits:
        return None
    return Match(
        0.15,
        [x for op in hits for x in _at(ev, op)],
        ["unswizzled shared tile (vec=1, maxPhase=1) with 128 B rows: column reads hit one bank"],
        "low",
    )


def shared_bank_conflicts_dyn(ev: Evidence) -> Match | None:
    conf = (ev.ncu("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum") or 0) + (
        ev.ncu("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum") or 0
    )
    wav = (ev.ncu("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum") or 0) + (
        ev.ncu("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum") or 0
    )
    if wav <= 0 or conf / wav < 0.10:  # ncu rule: conflicts >= 10 % of shared wavefronts
        return None
    return Match(
        min(1.0, conf / wav),
        [],
        [(f"ncu: bank conflicts {conf:.0f} = {100 * conf / wav:.0f} % of shared wavefronts (rule: >= 10 %)")],
        "high",
    )


PATTERNS.append(
    Pattern(
        "shared_bank_conflicts",
        "shared-memory accesses conflict on banks (>= 10 % of wavefronts)",
        "medium",
        ("source_edit", "set_constexpr"),
        shared_bank_conflicts,
        shared_bank_conflicts_dyn,
        fix_transform="smem_padding",
    )
)


def excess_layout_conversions(ev: Evidence) -> Match | None:
    in_loop = [
        op
        for op in ev.mod.ops
        if op.name == "ttg.convert_layout"
        and op.loops
        and op.result_type is not None
        and op.result_type.numel >= 1024
    ]
    if len(in_loop) < 3:
        return None
    return Match(
        0.25,
        [x for op in in_loop for x in _at(ev, op)][:6],
        [
            (
                f"{len(in_loop)} ttg.convert_layout of >= 1024 elements inside a loop "
                "(shared-memory round trip + barrier each)"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "excess_layout_conversions",
        "layout conversions through shared memory inside a loop",
        "medium",
        ("source_edit",),
        excess_layout_conversions,
    )
)


def shared_memory_tree_reduction(ev: Evidence) -> Match | None:
    """A loop that both synchronises the CTA and reads/writes shared memory, in a kernel with no warp
    shuffle: a tree reduction through shared memory, one barrier per halving step (PTX)."""
    k = ev.ptx
    if k is None or any(i.opcode.startswith("shfl") for i in k.instrs):
        return None
    for lo, hi in k.loops:
        bars = [i for i in k.instrs[lo : hi + 1] if i.opcode.startswith(("bar.sync", "barrier.sync"))]
        sh = [a for a in k.accesses if a.space == "shared" and lo <= a.instr.idx <= hi]
        if any(a.space == "global" and lo <= a.instr.idx <= hi for a in k.accesses):
            continue  # a tiled loop (global -> shared -> compute), not a tree over shared memory
        if bars and any(a.kind == "load" for a in sh) and any(a.kind == "store" for a in sh):
            return Match(
                0.4,
                _ptx_locs(bars + [a.instr for a in sh]),
                [
                    (
                        "a loop stores and reloads shared memory around bar.sync and the kernel has no shfl: "
                        "a shared-memory tree (a barrier per step, idle warps in the last five); finish each "
                        "warp with __shfl_down_sync and exchange one value per warp"
                    )
                ],
            )
    return None


PATTERNS.append(
    Pattern(
        "shared_memory_tree_reduction",
        "a reduction tree through shared memory with a barrier per step and no warp shuffles",
        "medium",
        ("source_edit",),
        shared_memory_tree_reduction,
        requires=("ptx",),
    )
)


def barrier_after_last_shared_use(ev: Evidence) -> Match | None:
    """A bar.sync outside loops after which no shared memory is touched: it orders nothing (a smell)."""
    k = ev.ptx
    if k is None or getattr(ev, "mod", None) is not None:  # Triton places its own barriers
        return None
    bars = [i for i in k.instrs if i.opcode.startswith(("bar.sync", "barrier.sync")) and not k.in_loop(i.idx)]
    if not bars:
        return None
    last = bars[-1]
    if any(a.space == "shared" and a.instr.idx > last.idx for a in k.accesses):
        return None
    if len(bars) < 2 and not any(a.space == "shared" for a in k.accesses):
        return None  # a lone barrier with no shared memory: barrier_in_loop / the kernel's own business
    return Match(
        0.03,
        _ptx_locs([last]),
        [f"bar.sync at {last.file}:{last.line} is followed by no shared-memory access: it orders nothing"],
        "low",
    )


PATTERNS.append(
    Pattern(
        "barrier_after_last_shared_use",
        "a CTA barrier after the last shared-memory access (orders nothing: a smell of little cost)",
        "low",
        ("source_edit",),
        barrier_after_last_shared_use,
        requires=("ptx",),
    )
)
