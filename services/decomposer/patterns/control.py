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
    _ptx_locs,
    _ptx_loop,
)
from shared.parsers.ttgir import defining_op, resolve_layout

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


def debug_print_or_assert_ptx(ev) -> Match | None:
    """CUDA C++: printf / assert compile to calls of vprintf / __assertfail (PTX)."""
    hits = [(i, c) for i, c in ev.ptx.calls() if c in ("vprintf", "__assertfail")]
    if not hits:
        return None
    return Match(
        0.9,
        _ptx_locs([i for i, _ in hits]),
        [
            f"{len(hits)} calls to {', '.join(sorted({c for _, c in hits}))}: device printf/assert left in the kernel"
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
        base, sliced = resolve_layout(t.layout, ev.layouts)
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


# ---- issue 22, library 60 -> 80. PTX predicates read `ev.ptx` (Triton and CUDA C++ alike).

_F64_ARITH = ("add.f64", "sub.f64", "mul.f64", "fma.rn.f64", "add.rn.f64", "mul.rn.f64", "sub.rn.f64")


def _promoted(k) -> list:
    """f64 arithmetic with an f64 immediate (0d...) applied to a float just widened by cvt.f64.f32: a
    float expression promoted to double by a double literal (`x * 0.5` instead of `x * 0.5f`)."""
    widened = {i.operands[0] for i in k.instrs if i.opcode == "cvt.f64.f32" and i.operands}
    narrowed = {
        i.operands[1] for i in k.instrs if i.opcode.startswith("cvt.rn.f32.f64") and len(i.operands) > 1
    }
    arith = [i for i in k.instrs if i.opcode.startswith(_F64_ARITH)]
    hits = [
        i
        for i in arith
        if any(o.startswith("0d") for o in i.operands[1:])
        and any(o in widened for o in i.operands[1:])
        and i.operands[0] in narrowed
    ]
    return (
        hits if 2 * len(hits) >= len(arith) else []
    )  # most of the f64 work, not one op of a real f64 kernel


def float_promoted_to_double(ev: Evidence) -> Match | None:
    k = ev.ptx
    hits = _promoted(k) if k is not None else []
    if not hits:
        return None
    hot = any(k.in_loop(i.idx) for i in hits)
    return Match(
        0.75 if hot else 0.45,
        _ptx_locs(hits),
        [
            (
                f"{len(hits)} f64 ops ({hits[0].opcode}) on a float widened by cvt.f64.f32 with a double literal: "
                "write the constants as float (0.5f) to keep the math in fp32"
            )
        ],
        "high" if hot else "medium",
    )


PATTERNS.append(
    Pattern(
        "float_promoted_to_double",
        "float math promoted to fp64 by double literals (cvt.f64.f32, an f64 op with a 0d immediate)",
        "high",
        ("source_edit",),
        float_promoted_to_double,
        requires=("ptx",),
    )
)

_RUNTIME_CALLS = ("vprintf", "malloc", "free", "__assertfail", "_Znwm", "_ZdlPv")


def noinline_call_in_loop(ev: Evidence) -> Match | None:
    """A `call` to a device function inside a loop (a __noinline__ function, Triton noinline=True): an ABI
    call per iteration (argument moves, a stack frame, no optimisation across the call)."""
    k = ev.ptx
    hits = [
        (i, c)
        for i, c in (k.calls() if k is not None else [])
        if c not in _RUNTIME_CALLS and k.in_loop(i.idx)
    ]
    if not hits:
        return None
    names = sorted({c for _, c in hits})
    return Match(
        0.35,
        _ptx_locs([i for i, _ in hits]),
        [
            f"{len(hits)} calls to {', '.join(names[:3])} inside a loop: inline it (__forceinline__, noinline=False)"
        ],
    )


PATTERNS.append(
    Pattern(
        "noinline_call_in_loop",
        "a non-inlined device-function call inside a loop (PTX call in the loop body)",
        "medium",
        ("source_edit",),
        noinline_call_in_loop,
        requires=("ptx",),
    )
)


def trig_slow_range_reduction(ev: Evidence) -> Match | None:
    """sinf/cosf/tanf compiled with their precise argument reduction: the PTX references the
    Payne-Hanek table __cudart_i2opi_f (a long slow path and a local array per call site)."""
    k = ev.ptx
    hits = [i for i in (k.instrs if k is not None else []) if any("__cudart_i2opi" in o for o in i.operands)]
    if not hits:
        return None
    hot = any(k.in_loop(i.idx) for i in hits) or any(lo <= i.idx <= hi for i in hits for lo, hi in k.loops)
    return Match(
        0.6 if hot else 0.2,
        _ptx_locs(hits),
        [
            "precise sinf/cosf: the Payne-Hanek range reduction (__cudart_i2opi_f table, a local array, a few "
            "f64 ops) is compiled in"
            + (" inside a loop" if hot else "")
            + "; use __sinf/__cosf for bounded arguments, or sinpif/cospif"
        ],
    )


PAYNE_HANEK_F64 = "0d3BF921FB54442D19"  # pi/2 * 2^-64: the f64 multiply of sinf's slow-path reduction


def trig_f64_ops(k) -> set[int]:
    """Indices of the f64 instructions that belong to sinf/cosf's slow path (when it is compiled in)."""
    if not any("__cudart_i2opi" in o for i in k.instrs for o in i.operands):
        return set()
    return {
        i.idx
        for i in k.f64_ops
        if i.opcode.startswith(("cvt.rn.f64.s64", "cvt.rn.f32.f64")) or PAYNE_HANEK_F64 in i.operands
    }


PATTERNS.append(
    Pattern(
        "trig_slow_range_reduction",
        "precise sinf/cosf/tanf with the slow Payne-Hanek argument reduction compiled in",
        "medium",
        ("source_edit",),
        trig_slow_range_reduction,
        requires=("ptx",),
    )
)


def int64_division(ev: Evidence) -> Match | None:
    """64-bit integer div/rem by a register inside a loop (a ~70-instruction software routine; the 32-bit
    one is ~20): index math that fits in 32 bits should divide in 32 bits."""
    k = ev.ptx
    hits = [
        i
        for i in _ptx_loop(ev, ("div.s64", "div.u64", "rem.s64", "rem.u64"))
        if len(i.operands) >= 3 and i.operands[2].startswith("%")
    ]
    if k is None or not hits:
        return None
    return Match(
        0.5,
        _ptx_locs(hits),
        [f"{len(hits)} 64-bit integer div/rem by a run-time value inside a loop ({hits[0].opcode})"],
    )


PATTERNS.append(
    Pattern(
        "int64_division",
        "64-bit integer division/remainder by a run-time value in a loop",
        "medium",
        ("source_edit",),
        int64_division,
        requires=("ptx",),
    )
)


def timing_instrumentation_left_in(ev: Evidence) -> Match | None:
    """clock()/clock64()/globaltimer reads left in the kernel: profiling code (a smell of small cost)."""
    k = ev.ptx
    regs = ("%clock", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi")
    hits = [i for i in (k.instrs if k is not None else []) if any(o in regs for o in i.operands)]
    if not hits:
        return None
    return Match(
        0.02,
        _ptx_locs(hits),
        [f"{len(hits)} reads of {hits[0].operands[-1]}: timing instrumentation left in the kernel"],
        "low",
    )


PATTERNS.append(
    Pattern(
        "timing_instrumentation_left_in",
        "clock64/globaltimer reads left in the kernel (profiling code; a smell of small cost)",
        "low",
        ("source_edit",),
        timing_instrumentation_left_in,
        requires=("ptx",),
    )
)


# ---- TTGIR predicates


def _combine_ops(ev: Evidence, red) -> list:
    return [o for o in ev.mod.ops if o.parent == red.id]


def exp_without_max_subtraction(ev: Evidence) -> Match | None:
    """A sum over exp(x) of loaded data with no reduction (a max) upstream of the exp: softmax without
    the max shift overflows to inf/NaN once a logit passes ~88."""
    hits = []
    for red in ev.mod.ops:
        if red.name != "tt.reduce" or not red.operands:
            continue
        if not any(o.name == "arith.addf" for o in _combine_ops(ev, red)):
            continue
        for e in _ancestors_ops(ev, red.operands[0]):
            if e.name not in ("math.exp", "math.exp2") or not e.operands:
                continue
            up = _ancestors_ops(ev, e.operands[0])
            if any(o.name == "tt.load" for o in up) and not any(o.name == "tt.reduce" for o in up):
                hits.append(e)
    if not hits:
        return None
    return Match(
        0.35,
        [x for op in hits[:2] for x in _at(ev, op)],
        [
            (
                f"{hits[0].name} at {ev.loc(hits[0])} of loaded data is summed with no max subtracted first: "
                "overflows to inf (NaN after the division) for inputs above ~88; subtract the row max"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "exp_without_max_subtraction",
        "a sum of exp(x) over loaded data without subtracting the max first (softmax overflow)",
        "medium",
        ("source_edit",),
        exp_without_max_subtraction,
    )
)


def reduction_in_half_precision(ev: Evidence) -> Match | None:
    """tl.sum over a bf16/fp16 tensor: Triton keeps the input dtype, so partial sums round to 8 (bf16) or
    11 (fp16) mantissa bits; upcast to fp32 before the reduction."""
    hits = [
        red
        for red in ev.mod.ops
        if red.name == "tt.reduce"
        and any(
            o.name == "arith.addf" and o.result_type is not None and o.result_type.elem in ("bf16", "f16")
            for o in _combine_ops(ev, red)
        )
    ]
    if not hits:
        return None
    return Match(
        0.3,
        [x for op in hits[:2] for x in _at(ev, op)],
        [f"tl.sum at {ev.loc(hits[0])} accumulates in 16-bit floats: upcast with .to(tl.float32) first"],
    )


PATTERNS.append(
    Pattern(
        "reduction_in_half_precision",
        "a sum reduction accumulated in bf16/fp16 (precision loss on long rows)",
        "medium",
        ("source_edit",),
        reduction_in_half_precision,
    )
)


def division_by_runtime_scalar(ev: Evidence) -> Match | None:
    """Tensor elements divided by a broadcast kernel argument: one reciprocal outside would turn each
    division into a multiply. Triton's `/` is already the fast div.full.f32, so this is a smell."""
    args = {a.name for a in ev.mod.args}
    hits = []
    for op in ev.mod.ops:
        if (
            op.name != "arith.divf"
            or len(op.operands) < 2
            or op.result_type is None
            or not op.result_type.shape
        ):
            continue
        d = defining_op(ev.mod, op.operands[1])
        if d is not None and d.name == "tt.splat" and d.operands and d.operands[0] in args:
            hits.append(op)
    if not hits:
        return None
    return Match(
        0.03,
        [x for op in hits[:2] for x in _at(ev, op)],
        [
            f"{len(hits)} element-wise divisions by the scalar argument {defining_op(ev.mod, hits[0].operands[1]).operands[0]}: multiply by its reciprocal"
        ],
        "low",
    )


PATTERNS.append(
    Pattern(
        "division_by_runtime_scalar",
        "element-wise division by a scalar kernel argument (multiply by its reciprocal; a small smell)",
        "low",
        ("source_edit",),
        division_by_runtime_scalar,
    )
)
