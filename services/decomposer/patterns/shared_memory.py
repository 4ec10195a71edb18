"""Shared-memory patterns: bank conflicts, layout conversions through shared memory."""

from __future__ import annotations

from services.decomposer import layouts as lay
from services.decomposer.evidence import Evidence, elem_bytes
from services.decomposer.patterns.base import (
    Match,
    Pattern,
    _at,
)

PATTERNS: list[Pattern] = []  # this family's table, in rank-tie order; each entry follows its function


def shared_bank_conflicts(ev: Evidence) -> Match | None:
    hits = []
    for op in ev.mod.ops:
        if op.name != "ttg.local_alloc" or op.result_type is None or len(op.result_type.shape) < 2:
            continue
        base, _ = lay.resolve(op.result_type.layout, ev.layouts)
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
