"""Tensor-core patterns: dots off the tensor cores, mma.sync instead of wgmma, K-loop pipelining."""

from __future__ import annotations

from services.decomposer.evidence import Evidence
from services.decomposer.patterns.base import (
    Match,
    Pattern,
    _ancestors_ops,
    _at,
    _depends_on_loop,
    _locs,
    _ptx_locs,
)

PATTERNS: list[Pattern] = []  # this family's table, in rank-tie order; each entry follows its function


def dot_upcast_operands(ev: Evidence) -> Match | None:
    hits = [d for d in ev.dots if d.upcast_from and d.a_dtype == "f32"]
    if not hits:
        return None
    return Match(
        0.9,
        [x for d in hits for x in _at(ev, d.op)],
        [
            f"dot operands are {d.upcast_from} converted to f32 before tt.dot: runs as "
            + ("fp32 FMA" if not d.tensor_cores else "tf32")
            + f" instead of native {d.upcast_from} MMA"
            for d in hits
        ],
    )


PATTERNS.append(
    Pattern(
        "dot_upcast_operands",
        "bf16/fp16 operands upcast to fp32 before tl.dot: no native MMA",
        "high",
        ("source_edit",),
        dot_upcast_operands,
    )
)


def dot_fp32_on_cuda_cores(ev: Evidence) -> Match | None:
    hits = [
        d
        for d in ev.dots
        if not d.tensor_cores and d.a_dtype == "f32" and not d.upcast_from and min(d.m, d.n, d.k) >= 16
    ]
    if not hits:
        return None
    # Precision policy changes the fix, not the diagnosis: fp32 FMA is ~1/6 of the tf32 tensor-core rate
    # either way. 'allow_tf32' -> input_precision="tf32" (a hint); 'exact' -> "tf32x3" (3xTF32 keeps fp32
    # accuracy on the tensor cores) or a bf16x3 split, both source edits.
    allowed = ev.facts.precision == "allow_tf32"
    return Match(
        0.85,
        [x for d in hits for x in _at(ev, d.op)],
        [
            f"tt.dot f32 {d.m}x{d.n}x{d.k} input_precision={d.precision or 'ieee'} lowers to FMA on "
            "CUDA cores, no tensor cores"
            + (
                "; the precision policy allows tf32: input_precision='tf32'"
                if allowed
                else "; policy 'exact' forbids plain tf32: use input_precision='tf32x3' (3xTF32, fp32 "
                "accuracy on tensor cores) or a bf16x3 split"
            )
            for d in hits
        ],
        None,
        ("add_hint", "source_edit") if allowed else ("source_edit",),
    )


PATTERNS.append(
    Pattern(
        "dot_fp32_on_cuda_cores",
        "fp32 tl.dot with ieee precision runs on CUDA-core FMA",
        "high",
        ("add_hint", "source_edit"),
        dot_fp32_on_cuda_cores,
    )
)


def dot_shape_too_small(ev: Evidence) -> Match | None:
    hits = [d for d in ev.dots if min(d.m, d.n, d.k) < 16]
    if not hits:
        return None
    return Match(
        0.8,
        [x for d in hits for x in _at(ev, d.op)],
        [
            f"tt.dot {d.m}x{d.n}x{d.k}: a dim below 16 "
            + (
                "keeps it off the tensor cores (FMA fallback)"
                if not d.tensor_cores
                else "is padded to the MMA shape: most of each tensor-core instruction is wasted"
            )
            for d in hits
        ],
    )


PATTERNS.append(
    Pattern(
        "dot_shape_too_small",
        "a tl.dot dim below 16 keeps it off tensor cores",
        "high",
        ("set_constexpr",),
        dot_shape_too_small,
    )
)


def wgmma_not_used(ev: Evidence) -> Match | None:
    if ev.arch < 90:
        return None
    hits = [d for d in ev.dots if d.tensor_cores and d.mma_version == 2]
    if not hits:
        return None
    why = []
    w = ev.mod.num_warps
    for d in hits:
        r = []
        if w % 4:
            r.append(f"num_warps={w} is not a multiple of 4 (a warpgroup)")
        if d.m < 64 or d.m % 64:
            r.append(f"M tile {d.m} is not a multiple of 64")
        if d.n % 8:
            r.append(f"N tile {d.n} is not a multiple of 8")
        why.append(
            f"tt.dot {d.a_dtype} {d.m}x{d.n}x{d.k} -> mma.sync (HMMA) on sm_90: "
            + ("; ".join(r) or "wgmma preconditions not met")
        )
    return Match(0.6, [x for d in hits for x in _at(ev, d.op)], why)


PATTERNS.append(
    Pattern(
        "wgmma_not_used",
        "Hopper dot lowered to mma.sync instead of wgmma (num_warps or tile shape)",
        "high",
        ("set_num_warps", "set_constexpr"),
        wgmma_not_used,
    )
)


def tensor_core_tile_small(ev: Evidence) -> Match | None:
    hits = [d for d in ev.dots if d.tensor_cores and d.mma_version == 3 and d.m * d.n <= 64 * 32]
    if not hits:
        return None
    return Match(
        0.35,
        [x for d in hits for x in _at(ev, d.op)],
        [f"wgmma tile {d.m}x{d.n}x{d.k}: too little work per instruction to hide its latency" for d in hits],
    )


PATTERNS.append(
    Pattern(
        "tensor_core_tile_small",
        "wgmma tile too small to amortise its latency",
        "medium",
        ("set_constexpr", "set_num_warps"),
        tensor_core_tile_small,
    )
)


def k_loop_not_pipelined(ev: Evidence) -> Match | None:
    hits = [lp for lp in ev.loops if lp.dots and lp.sync_loads and lp.async_copies == 0 and lp.tma == 0]
    if not hits:
        return None
    ev_lines = []
    for lp in hits:
        small = [a for a in lp.sync_loads if a.vec_bytes < 4]
        ev_lines.append(
            f"K loop at line {lp.line}: {len(lp.sync_loads)} synchronous tt.load feed the dot, no "
            f"cp.async/TMA prefetch (num_stages={ev.num_stages if ev.num_stages else '?'})"
            + ("; loads are < 4 B/thread so cp.async cannot be used" if small else "")
        )
    return Match(
        0.6,
        [ev.loc(lp.op) for lp in hits if ev.loc(lp.op)]
        + [x for lp in hits for a in lp.sync_loads for x in _locs(ev, [a])],
        ev_lines,
    )


PATTERNS.append(
    Pattern(
        "k_loop_not_pipelined",
        "the K loop loads synchronously: no software pipelining (cp.async/TMA)",
        "high",
        ("set_num_stages", "add_hint"),
        k_loop_not_pipelined,
        fix_transform="k_pipeline",
    )
)


def wgmma_serialized_wait(ev: Evidence) -> Match | None:
    hits = [
        lp
        for lp in ev.loops
        if lp.wait_pendings and max(lp.wait_pendings) == 0 and (lp.async_copies or lp.tma)
    ]
    if not hits:
        return None
    return Match(
        0.2,
        [ev.loc(lp.op) for lp in hits],
        ["warp_group_dot_wait {pendings = 0} each iteration: the next wgmma cannot overlap"],
    )


PATTERNS.append(
    Pattern(
        "wgmma_serialized_wait",
        "each wgmma is waited on before the next is issued",
        "low",
        ("set_num_stages",),
        wgmma_serialized_wait,
        fix_transform="k_pipeline",
    )
)


# ---------------------------------------------------------------- added with issue 22


def k_loop_masked_every_iteration(ev: Evidence) -> Match | None:
    masked: dict[int, list] = {}
    for lp in ev.loops:
        if not lp.dots:
            continue
        for o in lp.body:
            if o.name not in ("tt.load", "ttg.async_copy_global_to_local") or len(o.operands) < 2:
                continue
            mask = o.operands[1] if o.name == "tt.load" else (o.operands[2] if len(o.operands) > 2 else "")
            # an element-wise K mask (built from a range) that moves with the loop index; the software
            # pipeliner's own predicate (a splat of `iteration < last`) is not one
            if (
                mask
                and _depends_on_loop(ev, mask, lp.op.id)
                and any(x.name == "tt.make_range" for x in _ancestors_ops(ev, mask))
            ):
                masked.setdefault(lp.op.id, []).append((lp, o))
    # A peeled loop: a sibling loop (same region) with as many dots and no such mask runs the full tiles,
    # so this one only runs the boundary ones (even_k's tail, split_key_loop's diagonal/ragged tiles).
    peeled = {
        lp.op.id
        for lp in ev.loops
        if lp.op.id in masked
        and any(
            o.op.id != lp.op.id and o.op.id not in masked and o.op.parent == lp.op.parent
            and len(o.dots) == len(lp.dots)
            for o in ev.loops
        )
    }
    hits = [h for i, hs in masked.items() if i not in peeled for h in hs]
    if not hits:
        return None
    return Match(
        0.25,
        list(dict.fromkeys(x for _, o in hits for x in _at(ev, o))),
        [
            (
                f"K loop at line {hits[0][0].line}: {len(hits)} operand loads are masked on the loop index every "
                "iteration (a K-tail mask): mask math and predicated copies in the hot loop; peel the tail "
                "(unmasked full tiles, one masked last tile) or require K % BLOCK_K == 0"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "k_loop_masked_every_iteration",
        "the K loop masks its operand loads on the loop index every iteration (tail mask not peeled)",
        "medium",
        ("source_edit", "set_constexpr"),
        k_loop_masked_every_iteration,
        fix_transform="even_k_specialise",
    )
)


def dot_k_tile_small(ev: Evidence) -> Match | None:
    """A K tile of 16 in a K loop: one wgmma k-step per iteration, so the loop's fixed cost (barrier,
    async-copy wait, index math) is paid every 16 elements of K."""
    hits = [
        d
        for d in ev.dots
        if d.tensor_cores
        and d.op.loops
        and d.k <= 16
        and min(d.m, d.n) >= 64
        and d.a_dtype in ("bf16", "f16")
    ]
    if not hits:
        return None
    return Match(
        0.3,
        [x for d in hits for x in _at(ev, d.op)],
        [
            f"tt.dot {d.a_dtype} {d.m}x{d.n}x{d.k} in the K loop: BLOCK_K = {d.k} is one MMA k-step per "
            "iteration; the loop's wait/barrier/index cost is paid every 16 K (use BLOCK_K 64)"
            for d in hits
        ],
    )


PATTERNS.append(
    Pattern(
        "dot_k_tile_small",
        "the K tile is a single MMA k-step (BLOCK_K 16): loop overhead every iteration",
        "medium",
        ("set_constexpr",),
        dot_k_tile_small,
    )
)


# ---- issue 22, library 60 -> 80


def dot_accumulator_low_precision(ev: Evidence) -> Match | None:
    """A tl.dot in a K loop accumulating in fp16/bf16 (out_dtype=tl.float16): every K step rounds the
    running sum to 11 (or 8) mantissa bits; accumulate in fp32 and cast once at the store."""
    hits = [d for d in ev.dots if d.op.loops and d.acc_dtype in ("f16", "bf16")]
    if not hits:
        return None
    return Match(
        0.3,
        [x for d in hits[:2] for x in _at(ev, d.op)],
        [
            f"{d.m}x{d.n}x{d.k} dot accumulates in {d.acc_dtype} across the K loop: accumulate in fp32"
            for d in hits[:1]
        ],
    )


PATTERNS.append(
    Pattern(
        "dot_accumulator_low_precision",
        "a K-loop tl.dot accumulating in fp16/bf16 instead of fp32 (rounding every K step)",
        "medium",
        ("source_edit",),
        dot_accumulator_low_precision,
    )
)

MATMUL_INTENSITY = 50.0  # FLOP per byte well above the H200 fp32 ridge (~14): a compute-bound product


def matmul_on_cuda_cores(ev: Evidence) -> Match | None:
    """CUDA C++: a kernel of matmul arithmetic intensity (task FLOP/byte formulas >= 50) whose PTX has no
    mma/wgmma and runs fp32 FMAs in its loop: the product runs on the CUDA cores, not the tensor cores.
    (Triton's tl.dot has its own patterns: dot_fp32_on_cuda_cores, dot_upcast_operands.)"""
    k, f = ev.ptx, ev.facts
    if (
        k is None
        or getattr(ev, "mod", None) is not None
        or not f.flops
        or not f.bytes_moved
        or f.flops / f.bytes_moved < MATMUL_INTENSITY
    ):
        return None
    if any(i.opcode.startswith(("mma", "wgmma", "wmma")) for i in k.instrs):
        return None
    fmas = []
    for lo, hi in k.loops:  # a loop that loads its operands (global or shared) and multiplies them
        body = [i for i in k.instrs[lo : hi + 1] if i.opcode.startswith(("fma.rn.f32", "fma.rn.ftz.f32"))]
        loads = [a for a in k.accesses if a.kind == "load" and lo <= a.instr.idx <= hi]
        if len(body) >= 8 and len(loads) >= 2:
            fmas += [i for i in body if i not in fmas]
    if not fmas:
        return None
    return Match(
        0.8,
        _ptx_locs(fmas),
        [
            (
                f"{f.flops / f.bytes_moved:.0f} FLOP/B of matmul work and {len(fmas)} fp32 FMAs in the loop, no "
                "mma/wgmma in the PTX: the product runs on CUDA cores (use WMMA/mma.sync/wgmma, or cuBLAS)"
            )
        ],
        "high",
    )


PATTERNS.append(
    Pattern(
        "matmul_on_cuda_cores",
        "CUDA C++ matmul-intensity kernel with fp32 FMA loops and no tensor-core instructions",
        "high",
        ("source_edit",),
        matmul_on_cuda_cores,
        requires=("ptx", "costs"),
    )
)
