"""Control flow, precision and math patterns: branches, fp64, conversions, division, debug ops, fusion."""

from __future__ import annotations

from services.decomposer import divergence
from services.decomposer import layouts as lay
from services.decomposer.evidence import BARRIER_OPS, Evidence
from services.decomposer.patterns.base import (
    Match,
    Pattern,
    _ancestors_ops,
    _at,
    _locs,
)
from services.decomposer.ttgir import defining_op

PATTERNS: list[Pattern] = []  # this family's table, in rank-tie order; each entry follows its function


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


PATTERNS.append(
    Pattern(
        "divergent_branch_around_barrier",
        "a branch wraps ops that need a CTA barrier",
        "medium",
        ("source_edit",),
        divergent_branch_around_barrier,
    )
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


PATTERNS.append(
    Pattern(
        "data_dependent_branch_in_loop",
        "a branch on loaded data inside a loop",
        "low",
        ("source_edit",),
        data_dependent_branch_in_loop,
    )
)


def warp_divergence(ev: Evidence) -> Match | None:
    """Triton predicates masked lanes and its scf.if conditions are scalars: a lane split can only show in
    the PTX (services/decomposer/divergence.py), which both paths read."""
    return divergence.warp_divergence(ev.ptx)


def warp_divergence_dyn(ev: Evidence) -> Match | None:
    r = ev.ncu("smsp__thread_inst_executed_per_inst_executed.ratio")
    if r is None or r >= 24:  # ncu rule: < 24 active threads per executed instruction
        return None
    return Match(
        round(1 - r / 32, 3), [], [f"ncu: {r:.1f} active threads per instruction (rule: < 24)"], "high"
    )


PATTERNS.append(
    Pattern(
        "warp_divergence",
        "a branch on the lane index (or on per-lane data) splits warps: part of each warp idles through it "
        "(PTX; ncu: fewer than 24 of 32 threads active per instruction)",
        "high",
        ("source_edit",),
        warp_divergence,
        warp_divergence_dyn,
        requires=("ptx",),
    )
)


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


PATTERNS.append(
    Pattern(
        "fp64_arithmetic", "fp64 arithmetic where fp32 would do", "high", ("source_edit",), fp64_arithmetic
    )
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


PATTERNS.append(
    Pattern(
        "excess_conversions_in_loop",
        "many dtype conversions in a hot loop",
        "medium",
        ("source_edit",),
        excess_conversions_in_loop,
    )
)


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


PATTERNS.append(
    Pattern(
        "integer_division_in_hot_loop",
        "tensor integer division by a runtime value in a loop",
        "medium",
        ("source_edit", "set_constexpr"),
        integer_division_in_hot_loop,
    )
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


PATTERNS.append(
    Pattern(
        "slow_precise_math", "IEEE-precise div/sqrt in a loop", "low", ("source_edit",), slow_precise_math
    )
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


PATTERNS.append(
    Pattern(
        "debug_print_or_assert",
        "device print/assert left in the kernel",
        "high",
        ("source_edit",),
        debug_print_or_assert,
    )
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


PATTERNS.append(
    Pattern(
        "missed_fusion_elementwise",
        "a memory-bound kernel whose output feeds another kernel of the task",
        "high",
        ("source_edit",),
        missed_fusion_elementwise,
        requires=("costs",),
        fix_transform="fuse_epilogue",
        cost_in_kernel=False,
    )
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


PATTERNS.append(
    Pattern(
        "reduction_across_warps_in_loop",
        "cross-warp reductions inside a loop",
        "medium",
        ("set_num_warps", "source_edit"),
        reduction_across_warps_in_loop,
    )
)


# ---------------------------------------------------------------- added with issue 22


def _in_loop_tensor_ops(ev: Evidence, names: tuple[str, ...]) -> list:
    return [
        o
        for o in ev.mod.ops
        if o.name in names and o.loops and o.result_type is not None and o.result_type.shape
    ]


def exp_instead_of_exp2(ev: Evidence) -> Match | None:
    hits = _in_loop_tensor_ops(ev, ("math.exp",))
    if not hits:
        return None
    return Match(
        0.05,
        [x for o in hits[:3] for x in _at(ev, o)],
        [
            (
                f"{len(hits)} math.exp in a loop: each is ex2.approx after a multiply by log2(e); folding the scale "
                "into one multiply upstream saves one FMUL per element (small)"
            )
        ],
        "low",
    )


PATTERNS.append(
    Pattern(
        "exp_instead_of_exp2",
        "tl.exp in a hot loop where exp2 with the log2(e) scale folded saves a multiply per element",
        "low",
        ("source_edit",),
        exp_instead_of_exp2,
        fix_transform="exp2_fold",
    )
)


def division_by_sqrt_not_rsqrt(ev: Evidence) -> Match | None:
    hits = []
    for o in ev.mod.ops:
        if o.name != "arith.divf" or o.result_type is None or not o.result_type.shape or len(o.operands) < 2:
            continue
        chain = [x for x in _ancestors_ops(ev, o.operands[1], limit=8)]
        if any(x.name == "math.sqrt" for x in chain):
            hits.append(o)
    if not hits:
        return None
    return Match(
        0.06,
        [x for o in hits[:3] for x in _at(ev, o)],
        [
            (
                "a tensor divided by sqrt(...): one IEEE division per element where rsqrt once and a multiply "
                "would do"
            )
        ],
        "low",
    )


PATTERNS.append(
    Pattern(
        "division_by_sqrt_not_rsqrt",
        "elements divided by a square root instead of multiplied by its reciprocal (rsqrt)",
        "low",
        ("source_edit",),
        division_by_sqrt_not_rsqrt,
    )
)


def libdevice_call_in_loop(ev: Evidence) -> Match | None:
    hits = _in_loop_tensor_ops(ev, ("tt.extern_elementwise",))
    if not hits:
        return None
    syms = sorted({(o.attr("symbol") or "?").strip('"') for o in hits})
    return Match(
        0.3,
        [x for o in hits[:3] for x in _at(ev, o)],
        [
            (
                f"{len(hits)} libdevice calls ({', '.join(syms)}) per element per iteration: tens of instructions "
                "each; a cheaper formulation (exp2/sigmoid based, or approximate PTX) may do"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "libdevice_call_in_loop",
        "libdevice math calls per element inside a hot loop",
        "medium",
        ("source_edit",),
        libdevice_call_in_loop,
    )
)


def barrier_in_loop(ev: Evidence) -> Match | None:
    hits = [o for o in ev.mod.ops if o.name == "gpu.barrier" and o.loops]
    if not hits:
        return None
    return Match(
        0.35,
        [x for o in hits[:3] for x in _at(ev, o)],
        [
            (
                f"{len(hits)} explicit CTA barrier(s) (tl.debug_barrier) inside a loop: every warp waits for the "
                "slowest each iteration"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "barrier_in_loop",
        "an explicit CTA barrier inside a loop",
        "medium",
        ("source_edit",),
        barrier_in_loop,
    )
)


def spin_lock_atomic_cas(ev: Evidence) -> Match | None:
    hits = [o for o in ev.mod.ops if o.name == "tt.atomic_cas" and o.loops]
    if not hits:
        return None
    return Match(
        0.9,
        [x for o in hits[:3] for x in _at(ev, o)],
        [
            (
                "tt.atomic_cas retried in a loop: programs spin on a lock and serialise (and may deadlock if the "
                "holder is not resident); write per-program partials and reduce them in a second pass"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "spin_lock_atomic_cas",
        "programs spin on an atomic compare-and-swap lock",
        "high",
        ("source_edit",),
        spin_lock_atomic_cas,
        fix_transform="two_stage_reduction",
    )
)
