"""Global-memory access patterns: vector width, coalescing, transposes, gathers, reloads, atomics."""

from __future__ import annotations

import math

from services.decomposer.evidence import Access, Evidence
from services.decomposer.patterns.base import (
    Match,
    Pattern,
    _best,
    _depends_on_loop,
    _locs,
    _share,
)

PATTERNS: list[Pattern] = []  # this family's table, in rank-tie order; each entry follows its function


def _narrow(a: Access) -> bool:
    return (
        a.cls == "contiguous" and a.potential_vec_bytes >= 8 and a.eff_vec_bytes * 2 <= a.potential_vec_bytes
    )


def _hint_precondition(m: Match | None, accs: list[Access], transform_holds: bool = False) -> Match | None:
    """An alignment/divisibility hint (tl.multiple_of, tt.divisibility) is a promise: offered only when
    every argument feeding the offsets is known divisible. Triton specialises an int argument divisible
    by 16 (and a 16-B-aligned pointer) with tt.divisibility = 16, so an argument without it is NOT a
    multiple of 16 at the analysed shape: a hint there would be false, and only a source edit (pad the
    stride or allocation, peel the unaligned tail) can widen the access."""
    if m is None:
        return None
    bad = sorted({x.lstrip("%") for a in accs for x in a.undivisible})
    if not bad:
        return m
    why = (
        f"no alignment hint offered: {', '.join(bad)} {'is' if len(bad) == 1 else 'are'} not divisible by 16 at this shape "
        "(Triton would "
        "have specialised it), so a hint would be false; pad the stride/allocation to a multiple of 16 "
        "elements or split off the unaligned tail"
    )
    # `transform_holds`: the pattern's named transformation needs no divisibility (e.g. an unmasked
    # interior with a masked tail), so it stays on offer
    return Match(
        m.score,
        m.locations,
        [*m.evidence, why],
        m.severity,
        ("source_edit",),
        None if transform_holds else "",
    )


def scalar_global_access(ev: Evidence) -> Match | None:
    hits = [
        a
        for a in ev.accesses
        if a.kind in ("load", "store", "async_copy")
        and _narrow(a)
        and not (
            a.undivisible and set(a.undivisible) <= set(a.mask_args) and not set(a.undivisible) & a.arg_names
        )
    ]
    m = _best(
        ev,
        hits,
        lambda a: 0.9 * _share(ev, a) * (1 - a.eff_vec_bytes / a.potential_vec_bytes),
        lambda a: (
            f"{a.op.name} {a.dtype}{list(a.shape)} contiguous but {a.eff_vec_bytes} B/thread "
            f"(could be {a.potential_vec_bytes} B)"
            + (f"; SASS {a.kind} widths {sorted(set(a.sass_bits))} bits" if a.sass_bits else "")
            + (
                f"; no tt.divisibility on {', '.join(x.lstrip('%') for x in a.undivisible)}"
                if a.undivisible
                else ""
            )
        ),
    )
    return _hint_precondition(m, hits)


PATTERNS.append(
    Pattern(
        "scalar_global_access",
        "contiguous global access issued narrower than 16 B/thread because "
        "pointer or stride divisibility is unknown",
        "high",
        ("add_hint", "source_edit"),
        scalar_global_access,
        fix_transform="vector_width_hints",
    )
)


def mask_blocks_vectorization(ev: Evidence) -> Match | None:
    hits = [
        a
        for a in ev.accesses
        if a.kind in ("load", "store")
        and _narrow(a)
        and a.undivisible
        and set(a.undivisible) <= set(a.mask_args)
        and not (set(a.undivisible) & a.arg_names)
    ]
    m = _best(
        ev,
        hits,
        lambda a: 0.85 * _share(ev, a) * (1 - a.eff_vec_bytes / a.potential_vec_bytes),
        lambda a: (
            f"{a.op.name} mask depends on {', '.join(x.lstrip('%') for x in a.undivisible)} "
            f"(no divisibility): {a.eff_vec_bytes} B/thread instead of {a.potential_vec_bytes} B"
            + (f" (SASS widths {sorted(set(a.sass_bits))} bits)" if a.sass_bits else "")
        ),
    )
    return _hint_precondition(m, hits, transform_holds=True)


PATTERNS.append(
    Pattern(
        "mask_blocks_vectorization",
        "the mask's bound lacks divisibility, so a contiguous access is split into scalar accesses",
        "high",
        ("add_hint", "source_edit"),
        mask_blocks_vectorization,
        fix_transform="even_k_specialise",
    )
)


def uncoalesced_strided_access(ev: Evidence) -> Match | None:
    hits = [
        a
        for a in ev.accesses
        if a.cls in ("strided", "irregular") and a.kind != "atomic" and a.shape and math.prod(a.shape) >= 32
    ]
    return _best(
        ev,
        hits,
        lambda a: 0.95 * _share(ev, a),
        lambda a: (
            f"{a.op.name} {a.dtype}{list(a.shape)}: stride along the lane dim is "
            f"{a.strides[a.fastest] if a.fastest is not None else '?'} elements "
            f"(strides {list(a.strides)}): each lane touches its own sector"
        ),
    )


def uncoalesced_sectors_dyn(ev: Evidence) -> Match | None:
    b = ev.ncu("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio")
    # 0 means no LDG ran (loads went through TMA / cp.async, or there were none): nothing to judge. On the
    # H200 the clean bf16 and tf32 matmuls read 0 and were called uncoalesced before this guard.
    if b is None or b <= 0 or b >= 16:  # 32 = every byte of each 32 B sector used
        return None
    return Match(round(1 - b / 32, 3), [], [f"ncu: {b:.1f} of 32 bytes used per global load sector"], "high")


PATTERNS.append(
    Pattern(
        "uncoalesced_strided_access",
        "lanes of a warp access addresses a stride apart: one sector per lane",
        "high",
        ("source_edit", "set_constexpr"),
        uncoalesced_strided_access,
        uncoalesced_sectors_dyn,
        fix_transform="tiled_transpose",
    )
)


def transposed_access_no_staging(ev: Evidence) -> Match | None:
    hits = [a for a in ev.accesses if a.cls in ("transposed", "transposed_flat") and a.kind != "atomic"]
    return _best(
        ev,
        hits,
        lambda a: 0.95 * _share(ev, a),
        lambda a: (
            f"{a.op.name} {a.dtype}{list(a.shape)} "
            + (
                "indexes a flattened range with (i % C) * R + i // C: a transpose through global "
                "memory, adjacent lanes write R elements apart"
                if a.cls == "transposed_flat"
                else f"is contiguous along dim {a.strides.index(1)} but lanes walk dim {a.fastest}"
            )
        ),
    )


PATTERNS.append(
    Pattern(
        "transposed_access_no_staging",
        "a transposed read/write goes straight to global memory instead of through a shared-memory tile",
        "high",
        ("source_edit",),
        transposed_access_no_staging,
        fix_transform="tiled_transpose",
    )
)


def gather_indirect_access(ev: Evidence) -> Match | None:
    hits = [a for a in ev.accesses if a.cls == "indirect"]
    return _best(
        ev,
        hits,
        lambda a: 0.2 * _share(ev, a),
        lambda a: f"{a.op.name} address comes from loaded indices (gather/scatter)",
    )


PATTERNS.append(
    Pattern(
        "gather_indirect_access",
        "addresses come from loaded indices (gather/scatter)",
        "low",
        ("source_edit",),
        gather_indirect_access,
    )
)


def redundant_global_load(ev: Evidence) -> Match | None:
    seen: dict[tuple[str, str], Access] = {}
    dup: list[Access] = []
    for a in ev.accesses:
        if a.kind != "load":
            continue
        key = (a.op.operands[0], ",".join(a.op.operands[1:2]))
        if key in seen:
            dup += [seen[key], a]
        else:
            seen[key] = a
    dup = list({a.op.id: a for a in dup}.values())
    if not dup:
        return None
    return Match(
        round(min(1.0, 0.5 * sum(_share(ev, a) for a in dup[1:])) + 0.3, 3),
        _locs(ev, dup),
        [f"{len(dup)} tt.load ops read the same pointer tensor {dup[0].op.operands[0]}"],
    )


PATTERNS.append(
    Pattern(
        "redundant_global_load",
        "the same global tensor is loaded more than once",
        "medium",
        ("source_edit",),
        redundant_global_load,
    )
)


def loop_invariant_load(ev: Evidence) -> Match | None:
    hits = [
        a
        for a in ev.accesses
        if a.kind == "load"
        and a.op.loops
        and a.shape
        and not _depends_on_loop(ev, a.op.operands[0], a.op.loops[-1])
    ]
    return _best(
        ev,
        hits,
        lambda a: 0.6 * _share(ev, a) + 0.2,
        lambda a: f"tt.load of {a.dtype}{list(a.shape)} re-reads the same addresses every iteration",
    )


PATTERNS.append(
    Pattern(
        "loop_invariant_load",
        "a load inside a loop reads the same addresses every iteration",
        "medium",
        ("source_edit",),
        loop_invariant_load,
    )
)


def atomic_contention(ev: Evidence) -> Match | None:
    hits = [a for a in ev.accesses if a.kind == "atomic" and a.cls in ("uniform", "scalar")]
    if not hits:
        return None
    many = ev.programs is None or ev.programs > 1
    if not many:
        return None
    return Match(
        0.8,
        _locs(ev, hits),
        [
            f"{a.op.name} on one address from every program"
            + (f" ({ev.programs} programs)" if ev.programs else "")
            + ("; inside a loop" if a.in_loop else "")
            for a in hits
        ],
    )


PATTERNS.append(
    Pattern(
        "atomic_contention",
        "every program updates the same address atomically",
        "high",
        ("source_edit", "set_constexpr"),
        atomic_contention,
        fix_transform="two_stage_reduction",
    )
)


def atomics_in_loop(ev: Evidence) -> Match | None:
    hits = [a for a in ev.accesses if a.kind == "atomic" and a.in_loop and a.cls not in ("uniform", "scalar")]
    return _best(ev, hits, lambda a: 0.4, lambda a: f"{a.op.name} issued every loop iteration")


PATTERNS.append(
    Pattern(
        "atomics_in_loop",
        "atomics issued every iteration of a loop",
        "medium",
        ("source_edit",),
        atomics_in_loop,
    )
)
