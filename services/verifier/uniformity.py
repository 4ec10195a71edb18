"""Which SASS branch predicates are the same for every thread of a block (pure; no tool runs here).

A barrier jumped over by a branch is a hazard only when some threads of the block can take the branch
and others not. Triton's loops put their barriers behind a loop-entry guard (`@P3 BRA` over the loop),
and its guards test values every thread shares: the program id, kernel arguments, loop counters. A CUDA
kernel's `if (threadIdx.x < 16) __syncthreads();` tests a per-thread value. This module tells the two
apart by a backward slice over the kernel's control-flow graph: a predicate is block-uniform when every
definition that can reach the branch computes it only from block-uniform values.

Block-uniform roots: immediates and constant-bank operands (`c[0x0][0x210]`: kernel arguments), the
zero registers, and special registers that name the block (`SR_CTAID.*`, `SR_NCTAID.*`, `SR_CgaCtaId`,
`SRZ`). Per-thread roots: every other special register (`SR_TID.*`, `SR_LANEID`, clocks), atomics, local
memory, shuffles and votes, MMA results, and any register read before the kernel writes it. A load is a
function of its address (every thread reading one address reads one value), so a scalar `tl.load` that
feeds a loop bound (a block-sparse LUT, ragged offsets) stays uniform when its address is.

The slice over-approximates what may write a register (every instruction that names it), so it can
call a uniform predicate varying (then the barrier stays a hazard, the old behaviour), not the reverse
for the writes it can see. Needs numeric branch targets (cuobjdump's `BRA 0x1a0`).
"""

from __future__ import annotations

import re

from shared.tools.inspect import SassInstruction, SassKernel

_REG = re.compile(r"(?<![A-Za-z0-9_])(UR\d+|R\d+|UP\d|P\d|UPR|PR)(\.64)?(?![A-Za-z0-9_])")
_SPECIAL = re.compile(r"SR_[A-Za-z0-9_.]+|SRZ")
UNIFORM_SPECIALS = ("SR_CTAID.", "SR_NCTAID.", "SR_CgaCtaId", "SRZ", "SR_CLUSTERID", "SR_CLUSTER_CTAID")
# Per-thread by nature, whatever their inputs: each thread gets its own ordering, lane or fragment.
MMA_OPS = ("HMMA", "HGMMA", "IMMA", "IGMMA", "QGMMA", "BMMA", "DMMA")
VARYING_OPS = ("ATOM", "ATOMG", "ATOMS", "LDL", "SHFL", "VOTE", "VOTEU", "MATCH", *MMA_OPS)
_FLOW_END = ("EXIT", "RET", "BRX", "JMX", "KILL")
_PREDICATES = [f"P{i}" for i in range(7)]
_UPREDICATES = [f"UP{i}" for i in range(7)]


def _base(i: SassInstruction) -> str:
    return i.opcode.split(".", 1)[0]


def _guard(i: SassInstruction) -> str | None:
    """The register of `@P3` / `@!UP0`; None for no guard or the always-true `@PT`."""
    if not i.predicate:
        return None
    reg = i.predicate.lstrip("@!")
    return None if reg in ("PT", "UPT") else reg


def _regs(token: str) -> list[str]:
    out: list[str] = []
    for m in _REG.finditer(token):
        name, pair = m.group(1), m.group(2)
        if name == "PR":
            out += _PREDICATES
        elif name == "UPR":
            out += _UPREDICATES
        elif pair:
            prefix = "UR" if name.startswith("UR") else "R"
            n = int(name[len(prefix):])
            out += [name, f"{prefix}{n + 1}"]
        else:
            out.append(name)
    return out


def _width(i: SassInstruction) -> int:
    op = i.opcode
    if _base(i) in ("LDSM",) or ".128" in op:
        return 4
    if ".64" in op or ".WIDE" in op or _base(i) == "CS2R" or (i.operands and i.operands[0].endswith(".64")):
        return 2
    return 1


def _split(i: SassInstruction) -> tuple[set[str], set[str]]:
    """(registers the instruction writes, registers it reads). The first operand is written when it is a
    register (stores, barriers and branches start with an address or an immediate), with the width the
    opcode says (`.64`, `.WIDE`, `.128`, `LDSM`); a predicate right after it is a second result
    (`ISETP P1, P2, ...`, `IADD3 R4, P0, ...` carry-out, `PLOP3 P3, PT, ...`). The guard is read."""
    ops = i.operands
    reads = {g} if (g := _guard(i)) else set()
    first = ops[0] if ops else ""
    regs = _regs(first)
    if not regs or first.lstrip("-|!~").startswith(("[", "desc", "c[", "gdesc")):
        return set(), reads | set(_regs(" ".join(ops)))
    name = regs[0]
    if name.startswith(("P", "UP")) or first in ("PR", "UPR"):
        writes = set(regs)
    else:
        prefix = "UR" if name.startswith("UR") else "R"
        n = int(name[len(prefix):])
        writes = {f"{prefix}{n + k}" for k in range(_width(i))}
    rest = ops[1:]
    if rest and re.fullmatch(r"U?P[0-6T]", rest[0]):
        writes |= set(_regs(rest[0]))
        rest = rest[1:]
    return writes, reads | set(_regs(" ".join(rest)))


def _mma_writes(i: SassInstruction) -> set[str]:
    """The accumulator registers an MMA writes, which its text names only by the first: a warp-level
    HMMA/IMMA fragment is 4 registers; a warpgroup HGMMA 64xNxK holds N/2 fp32 (N/4 fp16) per thread."""
    base = _base(i)
    if base not in MMA_OPS or not i.operands or not re.fullmatch(r"R\d+", i.operands[0].split(".")[0]):
        return set()
    first = int(i.operands[0].split(".")[0][1:])
    count = 4
    if m := re.search(r"\.64x(\d+)x\d+\.(\w+)", i.opcode):
        count = int(m.group(1)) // (2 if m.group(2) in ("F32", "S32") else 4)
    return {f"R{first + k}" for k in range(count)}


def _varying(i: SassInstruction) -> bool:
    if _base(i) in VARYING_OPS:
        return True
    for op in i.operands:
        for sr in _SPECIAL.findall(op):
            if not sr.startswith(UNIFORM_SPECIALS):
                return True
    return False


class _Graph:
    def __init__(self, kernel: SassKernel) -> None:
        ins = kernel.instructions
        self.ins = ins
        at = {x.addr: n for n, x in enumerate(ins)}
        self.preds: list[list[int]] = [[] for _ in ins]
        for n, x in enumerate(ins):
            ends = _base(x) in _FLOW_END or (_base(x) == "BRA" and _guard(x) is None)
            if n + 1 < len(ins) and not ends:
                self.preds[n + 1].append(n)
            if _base(x) == "BRA" and (t := branch_target(x)) is not None and t in at:
                self.preds[at[t]].append(n)
        self.mentions = [set(_regs(" ".join(x.operands))) for x in ins]
        self.split = [_split(x) for x in ins]
        self.mma = [_mma_writes(x) for x in ins]

    def _writes(self, n: int, reg: str) -> bool:
        if reg in self.split[n][0] or reg in self.mma[n]:
            return True
        return _base(self.ins[n]) in VARYING_OPS and reg in self.mentions[n]

    def uniform(self, n: int, reg: str) -> bool:
        """True when `reg`, read by instruction n, is the same for every thread of the block."""
        todo = [(p, reg) for p in self.preds[n]] or [(-1, reg)]
        seen: set[tuple[int, str]] = set()
        while todo:
            j, r = todo.pop()
            if j < 0:
                return False  # read before anything wrote it on this path
            if (j, r) in seen:
                continue
            seen.add((j, r))
            if self._writes(j, r):
                if _varying(self.ins[j]):
                    return False
                back = self.preds[j] or [-1]
                todo += [(p, s) for s in self.split[j][1] for p in back]
                if _guard(self.ins[j]) is None:
                    continue  # overwritten here on every thread: older definitions do not reach
            todo += [(p, r) for p in (self.preds[j] or [-1])]
        return True


def branch_target(i: SassInstruction) -> int | None:
    for op in i.operands:
        try:
            return int(op.rstrip(";"), 16)
        except ValueError:
            continue
    return None


def block_uniform_guards(kernel: SassKernel) -> set[int]:
    """Addresses of the guarded instructions (branches, barriers) whose guard is block-uniform."""
    g = _Graph(kernel)
    out: set[int] = set()
    for n, x in enumerate(kernel.instructions):
        reg = _guard(x)
        if reg is None or _base(x) not in ("BRA", "BAR"):
            continue
        if ".DIV" in x.opcode:
            continue  # BRA.DIV branches on the warp being diverged
        if g.uniform(n, reg):
            out.add(x.addr)
    return out
