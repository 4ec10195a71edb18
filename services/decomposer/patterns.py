"""The bottleneck pattern library: one table of named patterns, each a predicate over the evidence.

A pattern is data (id, description, default severity, the change-description kinds that address it) plus
one small pure function over `Evidence` that returns a `Match` or None; an optional second function reads
dynamic evidence (ncu counters). Adding a pattern = one `Pattern(...)` entry + one test.

Severity orders findings first, `score` (estimated share of the kernel's time at stake, 0..1) second.
Thresholds quoted from NVIDIA's ncu rules come from /work/shared/GPU.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from services.decomposer import layouts as lay
from services.decomposer.evidence import BARRIER_OPS, Access, Evidence, elem_bytes
from services.decomposer.ttgir import defining_op
from shared.tools.decompose import Finding, Severity, Transformation

SEVERITY_RANK: dict[Severity, int] = {"high": 0, "medium": 1, "low": 2, "info": 3}


@dataclass(frozen=True)
class Match:
    score: float
    locations: list[str]
    evidence: list[str]
    severity: Severity | None = None  # overrides the pattern's default


@dataclass(frozen=True)
class Pattern:
    id: str
    description: str
    severity: Severity
    transformations: tuple[Transformation, ...]
    static: Callable[[Evidence], Match | None]
    dynamic: Callable[[Evidence], Match | None] | None = None


# ---------------------------------------------------------------- helpers


def _share(ev: Evidence, a: Access) -> float:
    """Share of the kernel's global bytes per program that this access moves (loops weigh x4)."""

    def w(x: Access) -> float:
        return x.bytes_per_program * (4 if x.in_loop else 1)

    total = sum(w(x) for x in ev.accesses if x.kind != "atomic") or 1.0
    return min(1.0, w(a) / total)


def _locs(ev: Evidence, accs: list[Access]) -> list[str]:
    out: list[str] = []
    for a in accs:
        loc = ev.loc(a.op)
        if loc and loc not in out:
            out.append(loc)
        for s in ev.sass_loc(a.line):
            if s not in out:
                out.append(s)
    return out


def _best(
    ev: Evidence,
    accs: list[Access],
    per: Callable[[Access], float],
    why: Callable[[Access], str],
    severity: Severity | None = None,
) -> Match | None:
    if not accs:
        return None
    scored = sorted(accs, key=lambda a: -per(a))
    score = min(1.0, sum(per(a) for a in scored))
    return Match(round(score, 3), _locs(ev, scored), [why(a) for a in scored[:4]], severity)


def _at(ev: Evidence, op) -> list[str]:
    loc = ev.loc(op)
    return ([loc] if loc else []) + ev.sass_loc(op.loc.line if op.loc else None)


def _is_dot_kernel(ev: Evidence) -> bool:
    return bool(ev.dots)


def _ancestors_ops(ev: Evidence, value: str, limit: int = 300) -> list:
    mod = ev.mod
    seen: set[str] = set()
    out = []
    todo = [value]
    while todo and len(seen) < limit:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in mod.iter_init:
            todo.append(mod.iter_init[v])
            continue
        op = defining_op(mod, v)
        if op is None or op.name in ("scf.for", "scf.while"):
            continue
        out.append(op)
        todo.extend(op.operands)
    return out


def _depends_on_loop(ev: Evidence, value: str, loop_id: int) -> bool:
    loop = ev.mod.ops[loop_id]
    mod = ev.mod
    seen: set[str] = set()
    todo = [value]
    while todo and len(seen) < 400:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in loop.block_args:
            return True
        op = defining_op(mod, v)
        if op is None:
            continue
        if loop_id in op.loops and op.name not in ("arith.constant",) and op.name == "tt.load":
            return True
        if op.id == loop_id:
            return True
        todo.extend(op.operands)
    return False


# ---------------------------------------------------------------- memory access


def _narrow(a: Access) -> bool:
    return (
        a.cls == "contiguous" and a.potential_vec_bytes >= 8 and a.eff_vec_bytes * 2 <= a.potential_vec_bytes
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
    return _best(
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
    return _best(
        ev,
        hits,
        lambda a: 0.85 * _share(ev, a) * (1 - a.eff_vec_bytes / a.potential_vec_bytes),
        lambda a: (
            f"{a.op.name} mask depends on {', '.join(x.lstrip('%') for x in a.undivisible)} "
            f"(no divisibility): {a.eff_vec_bytes} B/thread instead of {a.potential_vec_bytes} B"
            + (f" (SASS widths {sorted(set(a.sass_bits))} bits)" if a.sass_bits else "")
        ),
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


def gather_indirect_access(ev: Evidence) -> Match | None:
    hits = [a for a in ev.accesses if a.cls == "indirect"]
    return _best(
        ev,
        hits,
        lambda a: 0.2 * _share(ev, a),
        lambda a: f"{a.op.name} address comes from loaded indices (gather/scatter)",
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


def atomics_in_loop(ev: Evidence) -> Match | None:
    hits = [a for a in ev.accesses if a.kind == "atomic" and a.in_loop and a.cls not in ("uniform", "scalar")]
    return _best(ev, hits, lambda a: 0.4, lambda a: f"{a.op.name} issued every loop iteration")


# ---------------------------------------------------------------- shared memory


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


# ---------------------------------------------------------------- tensor cores


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


def dot_fp32_on_cuda_cores(ev: Evidence) -> Match | None:
    hits = [
        d
        for d in ev.dots
        if not d.tensor_cores and d.a_dtype == "f32" and not d.upcast_from and min(d.m, d.n, d.k) >= 16
    ]
    if not hits:
        return None
    allowed = ev.facts.precision == "allow_tf32"
    return Match(
        0.85 if allowed else 0.3,
        [x for d in hits for x in _at(ev, d.op)],
        [
            f"tt.dot f32 {d.m}x{d.n}x{d.k} input_precision={d.precision or 'ieee'} lowers to FMA on "
            "CUDA cores"
            + (
                "; the precision policy allows tf32"
                if allowed
                else "; policy 'exact' forbids tf32 (consider tf32x3 or bf16x3)"
            )
            for d in hits
        ],
        None if allowed else "low",
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


def tensor_core_tile_small(ev: Evidence) -> Match | None:
    hits = [d for d in ev.dots if d.tensor_cores and d.mma_version == 3 and d.m * d.n <= 64 * 32]
    if not hits:
        return None
    return Match(
        0.35,
        [x for d in hits for x in _at(ev, d.op)],
        [f"wgmma tile {d.m}x{d.n}x{d.k}: too little work per instruction to hide its latency" for d in hits],
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


# ---------------------------------------------------------------- registers and occupancy


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


def occupancy_limited_by_shared_memory(ev: Evidence) -> Match | None:
    return _occ(ev, "shared memory")


def occupancy_limited_by_block_size(ev: Evidence) -> Match | None:
    return _occ(ev, "blocks")


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


# ---------------------------------------------------------------- control, precision, math


def _region_ops(ev: Evidence, owner: int) -> list:
    return [o for o in ev.mod.ops if owner in o.ifs]


def divergent_branch_around_barrier(ev: Evidence) -> Match | None:
    hits = []
    for op in ev.mod.ops:
        if op.name != "scf.if":
            continue
        inner = [o for o in _region_ops(ev, op.id) if o.name in BARRIER_OPS]
        if inner:
            hits.append((op, inner))
    if not hits:
        return None
    return Match(
        0.45 if any(op.loops for op, _ in hits) else 0.25,
        [x for op, _ in hits for x in _at(ev, op)],
        [
            f"scf.if at {ev.loc(op)} wraps {len(inner)} ops that synchronise the CTA "
            f"({', '.join(sorted({o.name for o in inner}))}): barriers under a branch serialise warps"
            for op, inner in hits
        ],
    )


def data_dependent_branch_in_loop(ev: Evidence) -> Match | None:
    hits = []
    for op in ev.mod.ops:
        if (
            op.name == "scf.if"
            and op.loops
            and op.operands
            and any(o.name in ("tt.load", "tt.reduce") for o in _ancestors_ops(ev, op.operands[0]))
        ):
            hits.append(op)
    if not hits:
        return None
    return Match(
        0.2,
        [x for op in hits for x in _at(ev, op)],
        ["branch on loaded data inside a loop: the condition serialises each iteration"],
        "low",
    )


def warp_divergence_dyn(ev: Evidence) -> Match | None:
    r = ev.ncu("smsp__thread_inst_executed_per_inst_executed.ratio")
    if r is None or r >= 24:  # ncu rule: < 24 active threads per executed instruction
        return None
    return Match(
        round(1 - r / 32, 3), [], [f"ncu: {r:.1f} active threads per instruction (rule: < 24)"], "high"
    )


def warp_divergence(ev: Evidence) -> Match | None:
    return None  # Triton predicates masked lanes; only counters show SIMT divergence


def fp64_arithmetic(ev: Evidence) -> Match | None:
    hits = [
        op
        for op in ev.mod.ops
        if (op.name.startswith("arith.") or op.name.startswith("math."))
        and op.result_type is not None
        and op.result_type.elem == "f64"
        and op.name != "arith.constant"
        and op.result_type.shape
    ]
    if not hits:
        return None
    hot = any(op.loops for op in hits)
    return Match(
        0.7 if hot else 0.5,
        [x for op in hits[:4] for x in _at(ev, op)],
        [
            (
                f"{len(hits)} f64 tensor ops ({', '.join(sorted({o.name for o in hits}))}): FP64 runs at "
                "half the FP32 rate on H200 and doubles register use"
            )
        ],
        "high" if hot else "medium",
    )


def excess_conversions_in_loop(ev: Evidence) -> Match | None:
    conv = ("arith.extf", "arith.truncf", "arith.sitofp", "arith.fptosi", "tt.fp_to_fp", "arith.uitofp")
    for lp in ev.loops:
        c = [o for o in lp.body if o.name in conv and o.result_type is not None and o.result_type.shape]
        compute = [
            o
            for o in lp.body
            if o.name.startswith(("arith.", "math."))
            and o.result_type is not None
            and o.result_type.shape
            and o.name not in ("arith.constant",)
        ]
        if len(c) >= 4 and compute and len(c) / len(compute) >= 0.3:
            return Match(
                0.3,
                [x for o in c[:4] for x in _at(ev, o)],
                [
                    (
                        f"{len(c)} dtype conversions among {len(compute)} tensor ops in the loop at line "
                        f"{lp.line}"
                    )
                ],
            )
    return None


def integer_division_in_hot_loop(ev: Evidence) -> Match | None:
    hits = []
    for op in ev.mod.ops:
        if (
            op.name in ("arith.divsi", "arith.remsi", "arith.divui", "arith.remui")
            and op.loops
            and op.result_type is not None
            and op.result_type.shape
            and len(op.operands) > 1
        ):
            d = defining_op(ev.mod, op.operands[1])
            if d is None or d.name != "arith.constant":
                src = d
                while src is not None and src.name in ("tt.splat", "tt.broadcast") and src.operands:
                    src = defining_op(ev.mod, src.operands[0])
                if src is None or src.name != "arith.constant":
                    hits.append(op)
    if not hits:
        return None
    return Match(
        0.35,
        [x for op in hits[:4] for x in _at(ev, op)],
        [
            (
                f"{len(hits)} tensor integer divisions/remainders by a runtime value inside a loop "
                "(~20 instructions each)"
            )
        ],
    )


def slow_precise_math(ev: Evidence) -> Match | None:
    hits = [
        op
        for op in ev.mod.ops
        if op.name in ("tt.precise_divf", "tt.precise_sqrt", "math.sqrt")
        and op.loops
        and op.result_type is not None
        and op.result_type.shape
    ]
    if not hits:
        return None
    return Match(
        0.15,
        [x for op in hits[:4] for x in _at(ev, op)],
        [f"{len(hits)} IEEE-precise div/sqrt on tensors inside a loop"],
        "low",
    )


def debug_print_or_assert(ev: Evidence) -> Match | None:
    hits = [op for op in ev.mod.ops if op.name in ("tt.print", "tt.assert")]
    if not hits:
        return None
    return Match(
        0.9,
        [x for op in hits for x in _at(ev, op)],
        [
            f"{op.name} left in the kernel: device printf/assert serialises and adds a host round trip"
            for op in hits
        ],
    )


def missed_fusion_elementwise(ev: Evidence) -> Match | None:
    if ev.facts.kernels_in_task < 2 or ev.dots:
        return None
    if any(op.name in ("tt.reduce", "tt.scan") for op in ev.mod.ops):
        kind = "reduction"
    else:
        kind = "elementwise"
    loads = [a for a in ev.accesses if a.kind == "load"]
    stores = [a for a in ev.accesses if a.kind == "store"]
    if not loads or not stores:
        return None
    return Match(
        0.7,
        _locs(ev, stores),
        [
            (
                f"{kind} kernel, one of {ev.facts.kernels_in_task} kernels per "
                f"step: its {len(stores)} store(s) round-trip through HBM "
                "to the next kernel"
            )
        ],
    )


def reduction_across_warps_in_loop(ev: Evidence) -> Match | None:
    hits = []
    for op in ev.mod.ops:
        if op.name != "tt.reduce" or not op.loops or not op.operand_types:
            continue
        t = op.operand_types[0]
        base, sliced = lay.resolve(t.layout, ev.layouts)
        ax = op.int_attr("axis") or 0
        if (
            base is not None
            and lay.warps_along(base, ax + (1 if sliced is not None and ax >= sliced else 0)) > 1
        ):
            hits.append(op)
    if not hits:
        return None
    return Match(
        0.3,
        [x for op in hits for x in _at(ev, op)],
        [f"{len(hits)} tt.reduce across warps inside a loop: shared memory + barrier per iteration"],
    )


# ---------------------------------------------------------------- ncu rules (dynamic)


def _sol(ev: Evidence) -> tuple[float | None, float | None]:
    comp = ev.ncu("sm__throughput.avg.pct_of_peak_sustained_elapsed")
    mem = ev.ncu(
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    )
    return comp, mem


def latency_bound(ev: Evidence) -> Match | None:
    return None


def latency_bound_dyn(ev: Evidence) -> Match | None:
    comp, mem = _sol(ev)
    if comp is None or mem is None or comp >= 60 or mem >= 60:  # ncu rule: both < 60 % of peak
        return None
    return Match(
        round(0.8 - max(comp, mem) / 100, 3),
        [],
        [f"ncu: compute {comp:.0f} %, memory {mem:.0f} % of peak (both < 60 %: latency-bound)"],
    )


def memory_throughput_bound_dyn(ev: Evidence) -> Match | None:
    comp, mem = _sol(ev)
    if mem is None or mem <= 80 or (comp is not None and comp > mem - 10):
        return None
    return Match(
        0.05,
        [],
        [
            (
                f"ncu: memory {mem:.0f} % of peak (> 80 %): at the bandwidth roof; gains come "
                "from fewer bytes (fusion, precision), not scheduling"
            )
        ],
    )


def compute_throughput_bound_dyn(ev: Evidence) -> Match | None:
    comp, mem = _sol(ev)
    if comp is None or comp <= 80 or (mem is not None and mem > comp - 10):
        return None
    return Match(0.05, [], [f"ncu: compute {comp:.0f} % of peak (> 80 %): compute-bound"])


def stall_dominant_dyn(ev: Evidence) -> Match | None:
    issue = ev.ncu("smsp__issue_active.avg.per_cycle_active")
    if issue is None or issue >= 0.8:  # ncu rule: a stall matters while issue rate < 0.8
        return None
    stalls = {
        k: v
        for k, v in ev.dyn.items()
        if k.startswith(("smsp__average_warp_latency_issue_stalled_", "smsp__pcsamp_warps_issue_stalled_"))
    }
    # Shares within one family of counters, in one unit: the per-reason stall ratios against their own
    # sum. (Dividing them by ..._per_inst_issued.ratio, a different unit, gave "shares" of 290-790 on the
    # H200 and put this symptom above every diagnosis.)
    family = "smsp__average_warp_latency_issue_stalled_"
    if not any(k.startswith(family) for k in stalls):
        family = "smsp__pcsamp_warps_issue_stalled_"
    stalls = {k: v for k, v in stalls.items() if k.startswith(family)}
    total = sum(stalls.values())
    if not stalls or total <= 0:
        return None
    name, val = max(stalls.items(), key=lambda kv: kv[1])
    if val / total <= 0.30:  # ncu rule: > 30 % of cycles
        return None
    reason = name.split("stalled_")[-1].split(".")[0]
    # A stall is a symptom: scored at most 0.3, under the causal patterns it usually accompanies.
    return Match(
        round(val / total * 0.3, 3),
        [],
        [
            (
                f"ncu: stall '{reason}' is {100 * val / total:.0f} % of warp "
                f"cycles with issue rate {issue:.2f} (< 0.8)"
            )
        ],
    )


def achieved_occupancy_gap_dyn(ev: Evidence) -> Match | None:
    ach = ev.ncu("sm__warps_active.avg.pct_of_peak_sustained_active")
    theo = ev.ncu("sm__maximum_warps_per_active_cycle_pct")
    if ach is None or theo is None or theo - ach < 10:  # ncu rule: 10+ points below theoretical
        return None
    return Match(
        round((theo - ach) / 100, 3),
        [],
        [(f"ncu: achieved occupancy {ach:.0f} % vs theoretical {theo:.0f} %")],
    )


def uncoalesced_sectors_dyn(ev: Evidence) -> Match | None:
    b = ev.ncu("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio")
    # 0 means no LDG ran (loads went through TMA / cp.async, or there were none): nothing to judge. On the
    # H200 the clean bf16 and tf32 matmuls read 0 and were called uncoalesced before this guard.
    if b is None or b <= 0 or b >= 16:  # 32 = every byte of each 32 B sector used
        return None
    return Match(round(1 - b / 32, 3), [], [f"ncu: {b:.1f} of 32 bytes used per global load sector"], "high")


def static_none(ev: Evidence) -> Match | None:
    return None


def roofline_far_below(ev: Evidence) -> Match | None:
    f = ev.facts
    if f.measured_s is None or (f.bytes_moved is None and f.flops is None):
        return None
    floor = max((f.bytes_moved or 0) / f.device.copy_bytes_per_s, (f.flops or 0) / f.device.bf16_flops_per_s)
    frac = floor / f.measured_s if f.measured_s > 0 else 0
    if frac >= 0.5:
        return None
    return Match(
        round(0.5 * (1 - frac), 3),
        [],
        [
            (
                f"measured {f.measured_s * 1e6:.1f} us vs roofline floor "
                f"{floor * 1e6:.1f} us ({100 * frac:.0f} % of the roof)"
            )
        ],
    )


PATTERNS: tuple[Pattern, ...] = (
    Pattern(
        "scalar_global_access",
        "contiguous global access issued narrower than 16 B/thread because "
        "pointer or stride divisibility is unknown",
        "high",
        ("add_hint", "source_edit"),
        scalar_global_access,
    ),
    Pattern(
        "mask_blocks_vectorization",
        "the mask's bound lacks divisibility, so a contiguous access is split into scalar accesses",
        "high",
        ("add_hint", "source_edit"),
        mask_blocks_vectorization,
    ),
    Pattern(
        "uncoalesced_strided_access",
        "lanes of a warp access addresses a stride apart: one sector per lane",
        "high",
        ("source_edit", "set_constexpr"),
        uncoalesced_strided_access,
        uncoalesced_sectors_dyn,
    ),
    Pattern(
        "transposed_access_no_staging",
        "a transposed read/write goes straight to global memory instead of through a shared-memory tile",
        "high",
        ("source_edit",),
        transposed_access_no_staging,
    ),
    Pattern(
        "gather_indirect_access",
        "addresses come from loaded indices (gather/scatter)",
        "low",
        ("source_edit",),
        gather_indirect_access,
    ),
    Pattern(
        "redundant_global_load",
        "the same global tensor is loaded more than once",
        "medium",
        ("source_edit",),
        redundant_global_load,
    ),
    Pattern(
        "loop_invariant_load",
        "a load inside a loop reads the same addresses every iteration",
        "medium",
        ("source_edit",),
        loop_invariant_load,
    ),
    Pattern(
        "atomic_contention",
        "every program updates the same address atomically",
        "high",
        ("source_edit", "set_constexpr"),
        atomic_contention,
    ),
    Pattern(
        "atomics_in_loop",
        "atomics issued every iteration of a loop",
        "medium",
        ("source_edit",),
        atomics_in_loop,
    ),
    Pattern(
        "shared_bank_conflicts",
        "shared-memory accesses conflict on banks (>= 10 % of wavefronts)",
        "medium",
        ("source_edit", "set_constexpr"),
        shared_bank_conflicts,
        shared_bank_conflicts_dyn,
    ),
    Pattern(
        "excess_layout_conversions",
        "layout conversions through shared memory inside a loop",
        "medium",
        ("source_edit",),
        excess_layout_conversions,
    ),
    Pattern(
        "dot_upcast_operands",
        "bf16/fp16 operands upcast to fp32 before tl.dot: no native MMA",
        "high",
        ("source_edit",),
        dot_upcast_operands,
    ),
    Pattern(
        "dot_fp32_on_cuda_cores",
        "fp32 tl.dot with ieee precision runs on CUDA-core FMA",
        "high",
        ("add_hint", "source_edit"),
        dot_fp32_on_cuda_cores,
    ),
    Pattern(
        "dot_shape_too_small",
        "a tl.dot dim below 16 keeps it off tensor cores",
        "high",
        ("set_constexpr",),
        dot_shape_too_small,
    ),
    Pattern(
        "wgmma_not_used",
        "Hopper dot lowered to mma.sync instead of wgmma (num_warps or tile shape)",
        "high",
        ("set_num_warps", "set_constexpr"),
        wgmma_not_used,
    ),
    Pattern(
        "tensor_core_tile_small",
        "wgmma tile too small to amortise its latency",
        "medium",
        ("set_constexpr", "set_num_warps"),
        tensor_core_tile_small,
    ),
    Pattern(
        "k_loop_not_pipelined",
        "the K loop loads synchronously: no software pipelining (cp.async/TMA)",
        "high",
        ("set_num_stages", "add_hint"),
        k_loop_not_pipelined,
    ),
    Pattern(
        "wgmma_serialized_wait",
        "each wgmma is waited on before the next is issued",
        "low",
        ("set_num_stages",),
        wgmma_serialized_wait,
    ),
    Pattern(
        "register_spills",
        "registers spill to local memory",
        "high",
        ("set_constexpr", "set_num_warps", "set_num_stages", "set_maxnreg"),
        register_spills,
        register_spills_dyn,
    ),
    Pattern(
        "local_memory_array",
        "a per-thread array indexed at run time lives in local memory (stack frame, no spills)",
        "medium",
        ("source_edit",),
        local_memory_array,
    ),
    Pattern(
        "occupancy_limited_by_registers",
        "registers per thread cap resident warps at or below 50 %",
        "medium",
        ("set_maxnreg", "set_constexpr", "set_num_warps"),
        occupancy_limited_by_registers,
    ),
    Pattern(
        "occupancy_limited_by_shared_memory",
        "shared memory per block caps resident warps at or below 50 %",
        "medium",
        ("set_num_stages", "set_constexpr"),
        occupancy_limited_by_shared_memory,
    ),
    Pattern(
        "occupancy_limited_by_block_size",
        "blocks too small: the 32-blocks/SM limit caps warps",
        "medium",
        ("set_num_warps", "set_constexpr"),
        occupancy_limited_by_block_size,
    ),
    Pattern(
        "idle_threads_tile_smaller_than_block",
        "the tile has fewer elements than the block has threads",
        "high",
        ("set_num_warps", "set_constexpr"),
        idle_threads_tile_smaller_than_block,
    ),
    Pattern(
        "small_grid",
        "fewer programs than SMs (waves per SM < 1)",
        "high",
        ("set_constexpr", "set_grid"),
        small_grid,
    ),
    Pattern(
        "tail_effect",
        "the last wave of programs leaves much of the GPU idle",
        "medium",
        ("set_constexpr", "set_grid"),
        tail_effect,
    ),
    Pattern(
        "launch_bound_tiny_kernel",
        "so little work that launch latency dominates",
        "high",
        ("source_edit", "set_grid"),
        launch_bound_tiny_kernel,
    ),
    Pattern(
        "poor_l2_reuse_no_grouped_order",
        "matmul tiles scheduled row-major: no grouped (GROUP_M) order for L2 reuse",
        "medium",
        ("source_edit", "set_constexpr"),
        poor_l2_reuse_no_grouped_order,
    ),
    Pattern(
        "divergent_branch_around_barrier",
        "a branch wraps ops that need a CTA barrier",
        "medium",
        ("source_edit",),
        divergent_branch_around_barrier,
    ),
    Pattern(
        "data_dependent_branch_in_loop",
        "a branch on loaded data inside a loop",
        "low",
        ("source_edit",),
        data_dependent_branch_in_loop,
    ),
    Pattern(
        "warp_divergence",
        "fewer than 24 of 32 threads active per instruction (ncu)",
        "high",
        ("source_edit",),
        warp_divergence,
        warp_divergence_dyn,
    ),
    Pattern(
        "fp64_arithmetic", "fp64 arithmetic where fp32 would do", "high", ("source_edit",), fp64_arithmetic
    ),
    Pattern(
        "excess_conversions_in_loop",
        "many dtype conversions in a hot loop",
        "medium",
        ("source_edit",),
        excess_conversions_in_loop,
    ),
    Pattern(
        "integer_division_in_hot_loop",
        "tensor integer division by a runtime value in a loop",
        "medium",
        ("source_edit", "set_constexpr"),
        integer_division_in_hot_loop,
    ),
    Pattern(
        "slow_precise_math", "IEEE-precise div/sqrt in a loop", "low", ("source_edit",), slow_precise_math
    ),
    Pattern(
        "debug_print_or_assert",
        "device print/assert left in the kernel",
        "high",
        ("source_edit",),
        debug_print_or_assert,
    ),
    Pattern(
        "missed_fusion_elementwise",
        "a memory-bound kernel whose output feeds another kernel of the task",
        "high",
        ("source_edit",),
        missed_fusion_elementwise,
    ),
    Pattern(
        "reduction_across_warps_in_loop",
        "cross-warp reductions inside a loop",
        "medium",
        ("set_num_warps", "source_edit"),
        reduction_across_warps_in_loop,
    ),
    Pattern(
        "latency_bound",
        "compute and memory throughput both < 60 % of peak (ncu)",
        "high",
        ("set_constexpr", "set_num_warps", "set_num_stages"),
        latency_bound,
        latency_bound_dyn,
    ),
    Pattern(
        "memory_throughput_bound",
        "memory throughput > 80 % of peak (ncu): at the roof",
        "info",
        ("source_edit",),
        static_none,
        memory_throughput_bound_dyn,
    ),
    Pattern(
        "compute_throughput_bound",
        "compute throughput > 80 % of peak (ncu)",
        "info",
        ("source_edit",),
        static_none,
        compute_throughput_bound_dyn,
    ),
    Pattern(
        "stall_dominant",
        "one warp stall reason > 30 % of cycles at issue rate < 0.8 (ncu)",
        "medium",
        ("set_num_warps", "set_num_stages", "source_edit"),
        static_none,
        stall_dominant_dyn,
    ),
    Pattern(
        "achieved_occupancy_gap",
        "achieved occupancy 10+ points below theoretical (ncu)",
        "medium",
        ("set_constexpr", "set_grid", "set_num_warps"),
        static_none,
        achieved_occupancy_gap_dyn,
    ),
    Pattern(
        "roofline_far_below",
        "measured time under half of the roofline bound",
        "medium",
        ("set_constexpr", "set_num_warps", "set_num_stages"),
        roofline_far_below,
    ),
)


def finding(p: Pattern, static: Match | None, dynamic: Match | None) -> tuple[Finding, bool] | None:
    """One pattern's Finding from its static and dynamic matches (None when neither fired), and whether it
    is a cause: a static match of severity above info, i.e. something the code itself shows."""
    ms = [m for m in (static, dynamic) if m]
    if not ms:
        return None
    sev = min((m.severity or p.severity for m in ms), key=lambda s: SEVERITY_RANK[s])
    f = Finding(
        pattern=p.id,
        severity=sev,
        score=max(m.score for m in ms),
        locations=list(dict.fromkeys(x for m in ms for x in m.locations if x)),
        evidence=[e for m in ms for e in m.evidence],
        transformations=list(p.transformations),
    )
    return f, static is not None and sev != "info"


def rank(found: list[tuple[Finding, bool]]) -> list[Finding]:
    """Most important first: causes (static evidence in the code, with locations) before counter-only
    symptoms (latency-bound, a dominant stall, an occupancy gap: ncu says what, not where or why); within
    each, by severity, then score. A symptom keeps its own severity and stays in the list, and the first
    cause names the code that produces it.

    NVIDIA's ncu rules are layered the same way: the speed-of-light and latency rules are overviews that
    point at the sections holding the cause. On the H200, ranking symptoms by severity alone put a
    counter-only symptom above the planted cause in 8 of 41 cases (run 9); within a severity only, 3 of 7
    (run 5)."""
    order = sorted(found, key=lambda fc: (0 if fc[1] else 1, SEVERITY_RANK[fc[0].severity], -fc[0].score))
    return [f for f, _ in order]


def match(ev: Evidence, patterns: tuple[Pattern, ...] = PATTERNS) -> list[Finding]:
    """Every matching pattern, most important first (see `rank`)."""
    found = []
    for p in patterns:
        dynamic = p.dynamic(ev) if p.dynamic is not None and ev.dyn else None
        if fc := finding(p, p.static(ev), dynamic):
            found.append(fc)
    return rank(found)
