"""Global-memory access patterns: vector width, coalescing, transposes, gathers, reloads, atomics."""

from __future__ import annotations

import math

from services.decomposer.evidence import Access, Evidence
from services.decomposer.patterns.base import (
    Match,
    Pattern,
    _ancestors_ops,
    _at,
    _best,
    _depends_on_loop,
    _locs,
    _ptx_locs,
    _ptx_loop,
    _share,
    static_none,
)
from shared.parsers.ttgir import defining_op, value_type

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
        if a.cls in ("strided", "irregular")
        and a.kind != "atomic"
        and a.shape
        and math.prod(a.shape) >= 32
        # an index wrapped by a runtime remainder is unprovable, not proven strided: integer_modulo_in_address
        # names it and ncu's sectors per request decide
        and not (a.cls == "irregular" and _modulo_ops(ev, a))
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


# ---------------------------------------------------------------- added with issue 22


def _ptr_ops(ev: Evidence, a: Access) -> list:
    return _ancestors_ops(ev, a.op.operands[0]) if a.op.operands else []


def store_in_loop_invariant_address(ev: Evidence) -> Match | None:
    hits = [
        a
        for a in ev.accesses
        if a.kind == "store" and a.op.loops and not _depends_on_loop(ev, a.op.operands[0], a.op.loops[-1])
    ]
    return _best(
        ev,
        hits,
        lambda a: 0.5 * _share(ev, a) + 0.2,
        lambda a: (
            f"tt.store of {a.dtype}{list(a.shape)} writes the same addresses every loop iteration: "
            "only the last one survives (store once after the loop)"
        ),
    )


PATTERNS.append(
    Pattern(
        "store_in_loop_invariant_address",
        "a store inside a loop writes the same addresses every iteration",
        "medium",
        ("source_edit",),
        store_in_loop_invariant_address,
    )
)


def redundant_global_store(ev: Evidence) -> Match | None:
    seen: dict[str, Access] = {}
    dup: list[Access] = []
    for a in ev.accesses:
        if a.kind != "store" or not a.op.operands:
            continue
        key = a.op.operands[0]
        if key in seen and not a.op.loops:
            dup += [seen[key], a]
        seen.setdefault(key, a)
    dup = list({a.op.id: a for a in dup}.values())
    if not dup:
        return None
    return Match(
        round(min(1.0, 0.4 * _share(ev, dup[0]) + 0.2), 3),
        _locs(ev, dup),
        [
            (
                f"{len(dup)} tt.store ops write the same pointer tensor {dup[0].op.operands[0]}: the earlier ones are "
                "overwritten (wasted write bandwidth)"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "redundant_global_store",
        "the same global addresses are stored more than once (earlier stores overwritten)",
        "medium",
        ("source_edit",),
        redundant_global_store,
    )
)


def global_memory_round_trip(ev: Evidence) -> Match | None:
    stored: dict[str, Access] = {}
    hits: list[Access] = []
    for a in ev.accesses:
        if a.kind == "store" and a.op.operands:
            stored.setdefault(a.op.operands[0], a)
        elif a.kind == "load" and a.op.operands and a.op.operands[0] in stored:
            hits += [stored[a.op.operands[0]], a]
    hits = list({a.op.id: a for a in hits}.values())
    if not hits:
        return None
    return Match(
        round(min(1.0, 0.5 * sum(_share(ev, a) for a in hits) + 0.1), 3),
        _locs(ev, hits),
        [
            (
                "the kernel stores a tensor and loads it back from the same addresses: a round trip through "
                "global memory where the value is still in registers"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "global_memory_round_trip",
        "a value is stored to global memory and loaded back by the same kernel",
        "medium",
        ("source_edit",),
        global_memory_round_trip,
    )
)


def scalar_load_in_loop(ev: Evidence) -> Match | None:
    hits = [
        a
        for a in ev.accesses
        if a.kind == "load"
        and a.op.loops
        and not a.shape
        and _depends_on_loop(ev, a.op.operands[0], a.op.loops[-1])
    ]
    # only where the loop has no tile load to overlap them with (a flag per 4 KB chunk costs nothing)
    tiled = {lp for a in ev.accesses if a.kind in ("load", "async_copy") and a.shape for lp in a.op.loops}
    hits = [a for a in hits if a.op.loops[-1] not in tiled]
    if not hits:
        return None
    chained = any(o.name == "tt.load" for a in hits for o in _ptr_ops(ev, a))
    return Match(
        0.6 if chained else 0.4,
        _locs(ev, hits),
        [
            f"{len(hits)} scalar tt.load per loop iteration"
            + (
                "; each address comes from the previous load (a dependent chain: one memory latency per step)"
                if chained
                else ": one memory latency per step, nothing to overlap it with"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "scalar_load_in_loop",
        "a loop issues scalar (one-element) loads each iteration: latency, not bandwidth",
        "medium",
        ("source_edit", "set_constexpr"),
        scalar_load_in_loop,
    )
)


def int64_address_arithmetic(ev: Evidence) -> Match | None:
    hits = []
    for op in ev.mod.ops:
        if op.name != "tt.addptr" or len(op.operands) < 2:
            continue
        t = value_type(ev.mod, op.operands[1])
        if t is not None and t.shape and t.elem == "i64":
            hits.append(op)
    if not hits:
        return None
    return Match(
        0.05,
        [x for op in hits[:3] for x in _at(ev, op)],
        [
            (
                f"{len(hits)} tt.addptr with i64 offset tensors: two integer ops per 32-bit one (often a deliberate "
                "guard against > 2^31 elements; cheap in a memory-bound kernel)"
            )
        ],
        "low",
    )


PATTERNS.append(
    Pattern(
        "int64_address_arithmetic",
        "offsets computed in 64-bit integers (twice the integer work per element)",
        "low",
        ("source_edit",),
        int64_address_arithmetic,
    )
)


def _modulo_ops(ev: Evidence, a: Access) -> list:
    return [
        o
        for o in _ptr_ops(ev, a)
        if o.name in ("arith.remsi", "arith.remui") and o.result_type is not None and o.result_type.shape
    ]


def integer_modulo_in_address(ev: Evidence) -> Match | None:
    hits = [a for a in ev.accesses if a.kind in ("load", "store") and _modulo_ops(ev, a)]
    if not hits:
        return None
    return Match(
        0.08,
        _locs(ev, hits),
        [
            f"{a.op.name} address wraps with an integer remainder per element (~20 instructions each); "
            "whether lanes stay contiguous is not provable statically (ncu sectors per request tell)"
            for a in hits[:2]
        ],
        "low",
    )


PATTERNS.append(
    Pattern(
        "integer_modulo_in_address",
        "an element-wise integer remainder in the address (index wrap): integer work, coalescing unprovable",
        "low",
        ("source_edit",),
        integer_modulo_in_address,
    )
)


def atomic_output_accumulation(ev: Evidence) -> Match | None:
    hits = [
        a
        for a in ev.accesses
        if a.kind == "atomic" and a.shape and not a.in_loop and a.cls not in ("uniform", "scalar")
    ]
    if not hits or (ev.programs is not None and ev.programs <= 1):
        return None
    return Match(
        0.35,
        _locs(ev, hits),
        [
            f"{a.op.name} of a {a.dtype}{list(a.shape)} tile into the output: programs sharing an output "
            "tile serialise in L2 (and the fp32 sum order is not deterministic); write partials and reduce "
            "them in a second pass"
            for a in hits[:2]
        ],
    )


PATTERNS.append(
    Pattern(
        "atomic_output_accumulation",
        "programs accumulate tiles into the output with atomics (split reduction)",
        "medium",
        ("source_edit",),
        atomic_output_accumulation,
        fix_transform="two_stage_reduction",
    )
)


PATTERNS.append(
    Pattern(
        "read_only_load_not_nc",
        "CUDA C++: no input is `const __restrict__`, so no load takes the read-only (.nc) path",
        "low",
        ("source_edit",),
        static_none,
    )
)


# ---- issue 22, library 60 -> 80: PTX predicates read `ev.ptx` (Triton and CUDA C++ alike)


def volatile_access_in_loop(ev: Evidence) -> Match | None:
    """ld/st.volatile inside a loop: each iteration goes to memory (no caching in registers, no hoisting)."""
    hits = [i for i in _ptx_loop(ev, ("ld.volatile", "st.volatile")) if ".local" not in i.opcode]
    if not hits:
        return None
    return Match(
        0.4,
        _ptx_locs(hits),
        [
            (
                f"{len(hits)} {hits[0].opcode} inside a loop: a volatile pointer forbids keeping the value in a "
                "register, every iteration re-reads memory (drop `volatile`, load once outside the loop)"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "volatile_access_in_loop",
        "volatile loads/stores inside a loop: every iteration goes to memory (PTX ld/st.volatile)",
        "medium",
        ("source_edit",),
        volatile_access_in_loop,
        requires=("ptx",),
    )
)


def memory_fence_in_loop(ev: Evidence) -> Match | None:
    """membar/fence at GPU or system scope every iteration (CUDA __threadfence in a loop)."""
    hits = [i for i in _ptx_loop(ev, ("membar", "fence")) if not i.opcode.endswith(".cta")]
    if not hits:
        return None
    return Match(
        0.45,
        _ptx_locs(hits),
        [
            (
                f"{len(hits)} {hits[0].opcode} inside a loop: a device-wide fence waits for every earlier write "
                "to be visible, each iteration (fence once after the loop, or use release/acquire on the flag)"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "memory_fence_in_loop",
        "a device-scope memory fence inside a loop (PTX membar.gl / fence.sc.gpu each iteration)",
        "medium",
        ("source_edit",),
        memory_fence_in_loop,
        requires=("ptx",),
    )
)


def device_heap_allocation(ev: Evidence) -> Match | None:
    """A call to the device heap (malloc/free, new/delete) in the kernel: a global allocator per thread."""
    k = ev.ptx
    hits = [i for i, c in (k.calls() if k is not None else []) if c in ("malloc", "free", "_Znwm", "_ZdlPv")]
    if not hits:
        return None
    return Match(
        0.6,
        _ptx_locs(hits),
        [
            (
                f"{len(hits)} device-heap calls ({', '.join(sorted({c for i, c in k.calls() if i in hits}))}): "
                "device malloc serialises on a global allocator and its memory is uncached scratch; use "
                "registers, shared memory or a buffer allocated by the host"
            )
        ],
        "high",
    )


PATTERNS.append(
    Pattern(
        "device_heap_allocation",
        "the kernel allocates from the device heap (malloc/new in device code)",
        "high",
        ("source_edit",),
        device_heap_allocation,
        requires=("ptx",),
    )
)


def global_atomics_not_privatised(ev: Evidence) -> Match | None:
    """CUDA C++: global atomics on data-dependent addresses in a loop (a histogram) with no shared-memory
    atomics in the kernel: every element contends in L2 where a per-block copy in shared memory would not."""
    k = ev.ptx
    if k is None or any(a.kind == "atomic" and a.space == "shared" for a in k.accesses):
        return None
    hits = [
        a
        for a in k.accesses
        if a.kind == "atomic" and a.space == "global" and a.in_loop and a.cls in ("indirect", "irregular")
    ]
    if not hits:
        return None
    return Match(
        0.6,
        _ptx_locs([a.instr for a in hits]),
        [
            (
                f"{hits[0].instr.opcode} on an address from loaded data, every loop iteration, and no shared-memory "
                "atomics: privatise the bins per block in shared memory and merge them once"
            )
        ],
        "high",
    )


PATTERNS.append(
    Pattern(
        "global_atomics_not_privatised",
        "a histogram-style loop of global atomics on data-dependent addresses, not privatised in shared memory",
        "high",
        ("source_edit",),
        global_atomics_not_privatised,
        requires=("ptx",),
    )
)


# ---- issue 22, library 60 -> 80: TTGIR predicates


def _users(ev: Evidence, value: str) -> list:
    return [o for o in ev.mod.ops if value in o.operands]


def _mask_varies(ev: Evidence, mask: str, axis: int) -> bool:
    """False when the mask is broadcast from extent 1 along `axis` (a row mask under a row-wise
    reduction: a masked-off row's undefined lanes reduce into that row alone)."""
    d = defining_op(ev.mod, mask)
    if d is None or d.name != "tt.broadcast" or not d.operands:
        return True
    src = value_type(ev.mod, d.operands[0])
    return src is None or axis >= len(src.shape) or src.shape[axis] != 1


def masked_load_without_other_into_reduction(ev: Evidence) -> Match | None:
    """A masked tl.load with no `other=` whose value reaches a tl.reduce with no select between, its mask
    varying along the reduced axis (see _mask_varies): the masked-off lanes hold undefined values, so a max/sum over the tile can return garbage or NaN."""
    hits = []
    for red in ev.mod.ops:
        if red.name != "tt.reduce" or not red.operands:
            continue
        anc = _ancestors_ops(ev, red.operands[0])
        if any(o.name == "arith.select" for o in anc):
            continue
        axis = red.int_attr("axis") or 0
        hits += [
            o
            for o in anc
            if o.name == "tt.load"
            and len(o.operands) == 2
            and o not in hits
            and _mask_varies(ev, o.operands[1], axis)
        ]
    if not hits:
        return None
    return Match(
        0.3,
        [x for op in hits[:4] for x in _at(ev, op)],
        [
            f"tl.load at {ev.loc(op)} has a mask but no `other=`, and its lanes reach a reduction: the "
            "masked-off lanes are undefined (give other=0 for sums, -inf for max)"
            for op in hits[:2]
        ],
    )


PATTERNS.append(
    Pattern(
        "masked_load_without_other_into_reduction",
        "a masked load without `other=` feeds a reduction: masked-off lanes are undefined (wrong or NaN)",
        "medium",
        ("source_edit",),
        masked_load_without_other_into_reduction,
    )
)


_HALF = ("bf16", "f16")


def store_wider_than_inputs(ev: Evidence) -> Match | None:
    """Every global load is 16-bit float, every stored tensor fp32, and no tl.dot: the output moves twice
    the bytes of each input (stores in the inputs' dtype unless the task asks for fp32)."""
    loads = [
        o for o in ev.mod.ops if o.name == "tt.load" and o.result_type is not None and o.result_type.shape
    ]
    stores = []
    for o in ev.mod.ops:
        if o.name == "tt.store" and len(o.operands) > 1:
            t = value_type(ev.mod, o.operands[0])  # the pointer tensor: its pointee is the stored dtype
            if t is not None and t.shape:
                stores.append((o, t.elem.removeprefix("ptr<").removesuffix(">")))
    if ev.dots or not loads or not stores:
        return None
    if not all(o.result_type.elem in _HALF for o in loads) or not all(e == "f32" for _, e in stores):
        return None
    return Match(
        0.25,
        [x for o, _ in stores[:2] for x in _at(ev, o)],
        [
            (
                f"inputs are {loads[0].result_type.elem} but the output is stored as f32: the store moves 4 B per "
                "element where 2 B would do (store in the inputs' dtype if the task allows)"
            )
        ],
        "low",
    )


PATTERNS.append(
    Pattern(
        "store_wider_than_inputs",
        "16-bit float inputs, fp32 output: the store moves twice the bytes per element of each input",
        "low",
        ("source_edit",),
        store_wider_than_inputs,
    )
)


def atomic_stronger_ordering_than_needed(ev: Evidence) -> Match | None:
    """tl.atomic_add (Triton's default sem acq_rel) whose result is unused, in a kernel without a lock
    (atomic_cas): a plain accumulation needs only sem="relaxed". A smell of small cost."""
    if any(o.name == "tt.atomic_cas" for o in ev.mod.ops):
        return None
    hits = [
        o
        for o in ev.mod.ops
        if o.name == "tt.atomic_rmw"
        and any(f" {s}," in f" {o.text}" for s in ("acq_rel", "seq_cst"))
        and o.text.split(",")[0].strip() in ("fadd", "add")
        and not any(_users(ev, r) for r in o.results)
    ]
    if not hits:
        return None
    return Match(
        0.03,
        [x for op in hits[:4] for x in _at(ev, op)],
        [
            (
                f"{len(hits)} atomic add(s) with acq_rel ordering whose result is unused: an accumulation needs "
                'no ordering, sem="relaxed" drops the fence semantics'
            )
        ],
        "low",
    )


PATTERNS.append(
    Pattern(
        "atomic_stronger_ordering_than_needed",
        "an atomic accumulation with acq_rel ordering (Triton's default) where relaxed would do",
        "low",
        ("source_edit",),
        atomic_stronger_ordering_than_needed,
    )
)


def atomic_cas_retry_loop(ev: Evidence) -> Match | None:
    """CUDA C++: atom.cas inside a loop: a compare-and-swap retry loop (a float atomicMax/atomicMin
    emulated with atomicCAS, or a lock). Every conflicting lane retries, serialising on the address.
    (Triton's lock on tl.atomic_cas is spin_lock_atomic_cas, read from the TTGIR.)"""
    if ev.ptx is None or getattr(ev, "mod", None) is not None:
        return None
    hits = [
        i for i in _ptx_loop(ev, ("atom.global.cas", "atom.cas", "atom.shared.cas")) if ".cas" in i.opcode
    ]
    if not hits:
        return None
    return Match(
        0.5,
        _ptx_locs(hits),
        [
            (
                f"{hits[0].opcode} retried in a loop: lanes that lose the race loop again; use a native atomic "
                "(atomicMax on the float's ordered int bits, atomicAdd/red) or reduce in the block first"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "atomic_cas_retry_loop",
        "an atomicCAS retry loop (an emulated float min/max or a lock) where a native atomic would do",
        "medium",
        ("source_edit",),
        atomic_cas_retry_loop,
        requires=("ptx",),
    )
)
