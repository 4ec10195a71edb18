"""Layer 1, pure: resources within budget and a SASS diff of the candidate against its parent.

Inputs are tool records (ptxas_info's KernelResources, sass's SassKernel); nothing here runs a tool. A
finding is a failure; a *hazard* is a change the diff cannot prove safe (a barrier gone or made
conditional, new atomics, shared memory with no barrier): it fails too, marked "needs human review", with
the SASS lines involved.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.verifier.uniformity import block_uniform_guards, branch_target
from shared.tools.inspect import KernelResources, SassInstruction, SassKernel
from shared.tools.task import Dtype, Precision

# Bits of mantissa + exponent that matter for a dot: a rank per SASS type token. TF32 keeps fp32's range
# with a 10-bit mantissa, so it sits between F32 and the 16-bit types.
TYPE_RANK = {
    "F64": 64,
    "F32": 32,
    "TF32": 19,
    "F16": 16,
    "BF16": 16,
    "E4M3": 8,
    "E5M2": 8,
    "S8": 8,
    "U8": 8,
    "S4": 4,
    "U4": 4,
}
MMA_OPS = ("HGMMA", "HMMA", "QGMMA", "IGMMA", "IMMA")
# Conversions to a 16-bit float (F2FP packs two fp32 into f16/bf16 pairs); in an fp32 task they mean the
# value was rounded to 16 bits somewhere.
NARROWING = ("F2FP.F16", "F2FP.BF16", "F2F.F16.F32", "F2F.BF16.F32")
HALF_MATH = ("HADD2", "HFMA2", "HMUL2", "HMNMX2")
BARRIER_OPS = ("BAR", "SYNCS")  # bar.sync and the mbarrier arrive/wait family
ATOMIC_OPS = ("ATOMG", "ATOM", "RED", "ATOMS")
MAX_LINES = 8  # SASS lines quoted per hazard: enough to find the spot


@dataclass
class Finding:
    reason: str
    hazard: bool = False
    lines: list[str] = field(default_factory=list)


def line(i: SassInstruction) -> str:
    where = f"  [{i.file.rsplit('/', 1)[-1]}:{i.line}]" if i.file and i.line else ""
    pred = f"{i.predicate} " if i.predicate else ""
    return f"/*{i.addr:04x}*/ {pred}{i.opcode} {', '.join(i.operands)}{where}".rstrip()


def _base(i: SassInstruction) -> str:
    return i.opcode.split(".", 1)[0]


def _of(kernel: SassKernel, ops: tuple[str, ...]) -> list[SassInstruction]:
    return [i for i in kernel.instructions if _base(i) in ops]


def _predicated(i: SassInstruction) -> bool:
    return i.predicate is not None and i.predicate not in ("@PT", "@UPT")


def conditional_barriers(kernel: SassKernel) -> list[SassInstruction]:
    """Barriers some threads of a block may skip: under a per-thread predicate, or jumped over by a forward
    branch on one. Guards every thread shares (Triton's loop-entry tests on the program id and kernel
    arguments) are not divergence: `uniformity` proves them block-uniform by a slice over the SASS.

    Needs numeric branch targets (cuobjdump's `BRA 0x1a0`); with nvdisasm's labels only predicated
    barriers are seen.
    """
    uniform = block_uniform_guards(kernel)
    skips = [
        (i.addr, t)
        for i in kernel.instructions
        if _base(i) == "BRA" and _predicated(i) and i.addr not in uniform
        and (t := branch_target(i)) is not None and t > i.addr
    ]
    return [
        b for b in _of(kernel, ("BAR",))
        if (_predicated(b) and b.addr not in uniform) or any(a < b.addr < t for a, t in skips)
    ]


def resource_findings(
    cand: KernelResources | None,
    parent: KernelResources | None,
    dynamic_shared: int | None,
    *,
    max_registers: int,
    max_shared: int,
    allow_spills: bool,
) -> list[Finding]:
    out: list[Finding] = []
    if cand is None:
        return out
    if cand.registers is not None and cand.registers > max_registers:
        out.append(Finding(f"uses {cand.registers} registers per thread; the budget is {max_registers}"))
    shared = cand.shared_bytes + (dynamic_shared or 0)
    if shared > max_shared:
        out.append(
            Finding(
                f"needs {shared / 1024:.1f} KB of shared memory per block; the H200 allows "
                f"{max_shared / 1024:.0f} KB (GPU.md): shrink the tiles or the stages"
            )
        )
    spills = cand.spill_stores_bytes + cand.spill_loads_bytes
    before = (parent.spill_stores_bytes + parent.spill_loads_bytes) if parent else 0
    if spills > before and not allow_spills:
        out.append(
            Finding(
                f"new register spills: {cand.spill_stores_bytes} bytes stored, "
                f"{cand.spill_loads_bytes} loaded per thread (parent {before}); the task does not "
                "allow spills: lower the tile or raise maxnreg"
            )
        )
    return out


def _mma_types(kernel: SassKernel) -> list[tuple[str, str, SassInstruction]]:
    """(accumulator type, input type) of every MMA, from modifiers like HGMMA.64x128x16.F32.BF16."""
    out = []
    for i in _of(kernel, MMA_OPS):
        types = [m for m in i.opcode.split(".")[1:] if m in TYPE_RANK]
        if types:
            out.append((types[0], types[-1], i))
    return out


def precision_findings(
    cand: SassKernel, parent: SassKernel, precision: Precision, dtype: Dtype
) -> list[Finding]:
    out: list[Finding] = []
    c_mma, p_mma = _mma_types(cand), _mma_types(parent)
    # fp32 dots on CUDA cores (FFMA) are the exact baseline; "allow_tf32" lets fp32 inputs round to tf32.
    floor_in = TYPE_RANK["TF32"] if precision == "allow_tf32" else TYPE_RANK["F32"]
    p_in = min((TYPE_RANK[t] for _, t, _ in p_mma), default=TYPE_RANK[_dtype_token(dtype)])
    p_acc = min((TYPE_RANK[a] for a, _, _ in p_mma), default=TYPE_RANK["F32"])
    low_in = [i for _, t, i in c_mma if TYPE_RANK[t] < min(p_in, floor_in if dtype == "float32" else p_in)]
    if low_in:
        out.append(
            Finding(
                f"precision downgrade: dot inputs {_types(low_in)} where the parent uses "
                f"{_types([i for *_, i in p_mma]) or 'fp32 FFMA'}; the task's precision policy is "
                f"{precision!r}",
                lines=[line(i) for i in low_in[:MAX_LINES]],
            )
        )
    low_acc = [i for a, _, i in c_mma if TYPE_RANK[a] < p_acc]
    if low_acc:
        out.append(
            Finding(
                f"precision downgrade: the dot accumulates in {_types(low_acc)} where the parent "
                f"accumulates in {', '.join(sorted({a for a, _, _ in p_mma})) or 'F32'}",
                lines=[line(i) for i in low_acc[:MAX_LINES]],
            )
        )
    if dtype == "float32":
        for name, ops in (
            ("conversions to 16-bit floats", NARROWING),
            ("half-precision arithmetic", HALF_MATH),
        ):
            c = [i for i in cand.instructions if i.opcode.startswith(ops) and not _move_idiom(i)]
            p = [i for i in parent.instructions if i.opcode.startswith(ops) and not _move_idiom(i)]
            if len(c) > len(p):
                out.append(
                    Finding(
                        f"precision downgrade: {len(c)} {name} ({_types(c)}) in an fp32 task, the "
                        f"parent has {len(p)}",
                        lines=[line(i) for i in c[:MAX_LINES]],
                    )
                )
    return out


def _move_idiom(i: SassInstruction) -> bool:
    """`HFMA2.MMA R8, -RZ, RZ, 0, 0` is ptxas loading a constant (0 * 0 + imm), not half arithmetic."""
    srcs = [o.lstrip("-|") for o in i.operands[1:3]]
    return i.opcode.startswith("HFMA2") and srcs == ["RZ", "RZ"]


def _dtype_token(dtype: Dtype) -> str:
    return {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}[dtype]


def _types(instrs: list[SassInstruction]) -> str:
    return ", ".join(sorted({i.opcode for i in instrs}))


def hazard_findings(
    cand: SassKernel,
    parent: SassKernel,
    cand_cf: SassKernel | None = None,
    parent_cf: SassKernel | None = None,
) -> list[Finding]:
    """Changes no static rule can prove safe. `*_cf` are the same kernels with numeric branch targets."""
    out: list[Finding] = []
    c_atom, p_atom = _of(cand, ATOMIC_OPS), _of(parent, ATOMIC_OPS)
    if len(c_atom) > len(p_atom):
        out.append(
            Finding(
                f"needs human review: {len(c_atom) - len(p_atom)} new atomic instruction(s) "
                f"({_types(c_atom)}): ordering and contention are not provable statically",
                hazard=True,
                lines=[line(i) for i in c_atom[:MAX_LINES]],
            )
        )
    c_bar, p_bar = _of(cand, BARRIER_OPS), _of(parent, BARRIER_OPS)
    c_smem = _of(cand, ("STS", "LDS", "LDSM"))
    writes, reads = any(_base(i) == "STS" for i in c_smem), any(_base(i) in ("LDS", "LDSM") for i in c_smem)
    if p_bar and not c_bar and c_smem:
        out.append(
            Finding(
                f"needs human review: every barrier removed ({len(p_bar)} in the parent) while "
                "shared memory is still used",
                hazard=True,
                lines=[line(i) for i in c_smem[:MAX_LINES]],
            )
        )
    elif writes and reads and not c_bar:
        out.append(
            Finding(
                "needs human review: shared memory written and read with no barrier between "
                "threads (a race unless each thread reads only its own writes)",
                hazard=True,
                lines=[line(i) for i in c_smem[:MAX_LINES]],
            )
        )
    # A barrier behind a block-uniform guard (Triton's loop-entry tests) is not divergent; a barrier some
    # threads can skip, beyond what the parent already had, is.
    c_cond = conditional_barriers(cand_cf or cand)
    p_cond = conditional_barriers(parent_cf or parent)
    if len(c_cond) > len(p_cond):
        by_addr = {i.addr: i for i in cand.instructions}  # the line-annotated copy of the same code
        out.append(
            Finding(
                f"needs human review: {len(c_cond)} barrier(s) in divergent code (the parent has "
                f"{len(p_cond)}): threads that skip a barrier deadlock or race the others",
                hazard=True,
                lines=[line(by_addr.get(i.addr, i)) for i in c_cond[:MAX_LINES]],
            )
        )
    return out


def local_memory_findings(cand: SassKernel, parent: SassKernel, allow_spills: bool) -> list[Finding]:
    c = cand.summary.local_loads + cand.summary.local_stores
    p = parent.summary.local_loads + parent.summary.local_stores
    if c > p and not allow_spills:
        lines = [line(i) for i in _of(cand, ("LDL", "STL"))[:MAX_LINES]]
        return [
            Finding(
                f"new local memory: {c} LDL/STL instructions (parent {p}): register spills or a "
                "local array, slow and not allowed by the task",
                lines=lines,
            )
        ]
    return []
