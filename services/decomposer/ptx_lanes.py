"""PTX read per lane: how each address moves from one lane of a warp to the next. Pure.

For a kernel with no TTGIR (CUDA C++), the PTX is the one text that still has the address arithmetic. One
pass over the entry's instructions gives every register a lane coefficient: by how much its value
changes from lane l to lane l+1 of a warp, with %tid.x = 1 per lane (a block of >= 32 threads along x).
  int   known step (0 = the same for the whole warp, e.g. %ctaid.x or %tid.x >> 5)
  "S"   a run-time step: a kernel parameter times a lane-varying value (`c * rows`)
  "IND" derived from loaded data (gather/scatter, data-dependent branch)
  "NA"  non-linear in the lane (division, masks below 32, ...)
Each ld/st/atom/red then gets its byte step per lane, its width and the source line of its `.loc`
(`inlined_at` resolved to the caller's line). Registers are re-assigned in loops; one pass in text order
is what the compiler's straight-line address code needs (a loop only adds a uniform increment).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from shared.parsers.ptx import PtxInstr, read_entry

Coef = int | str  # int step, "S", "IND", "NA"

_BITS = {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16, "b32": 32}
_BITS |= {"u32": 32, "s32": 32, "f32": 32, "b64": 64, "u64": 64, "s64": 64, "f64": 64, "b128": 128}
_IMM = re.compile(r"^-?(0[xX][0-9a-fA-F]+|\d+)$")


@dataclass(frozen=True)
class MemAccess:
    """One ld/st/atom/red: space, byte step per lane, bytes per lane, source line, loop membership."""

    instr: PtxInstr
    space: str  # global, shared, local
    kind: str  # load, store, atomic
    coef: Coef
    width: int  # bytes per lane
    two_d: bool  # address has a parameter-scaled term (a row-major 2-D index)
    in_loop: bool

    @property
    def line(self) -> int:
        return self.instr.line

    @property
    def cls(self) -> str:
        """contiguous / strided / uniform / indirect / irregular, for the pattern predicates."""
        c = self.coef
        if c == 0:
            return "uniform"
        if c == "S":
            return "strided"
        if c == "IND":
            return "indirect"
        if c == "NA":
            return "irregular"
        assert isinstance(c, int)
        return "contiguous" if abs(c) <= self.width else "strided"

    def bank_ways(self) -> int:
        """Shared-memory bank conflict degree of one warp-wide access (32 banks of 4 B; 1 = none)."""
        if self.space != "shared" or not isinstance(self.coef, int) or self.coef == 0:
            return 1
        words = abs(self.coef) // 4 if abs(self.coef) >= 4 else 0
        if words == 0:
            return 1  # sub-word steps: lanes share a word, served by one wavefront
        return math.gcd(words, 32)


@dataclass(frozen=True)
class DivergentBranch:
    """A conditional forward branch whose predicate differs between lanes of one warp.

    kind "lane": the condition is non-linear in the lane index (parity, a mask or modulo below 32, ...):
    every warp splits. kind "data": it comes from data each lane loaded: a warp splits where the data does
    (only counters say how often). `region` PTX instructions run for part of the warp (both sides of an
    if/else, serialised); `body` is the enclosing loop's instructions (or the whole kernel's)."""

    instr: PtxInstr
    kind: str  # "lane" | "data"
    region: int
    body: int
    in_loop: bool

    @property
    def fraction(self) -> float:
        return min(1.0, self.region / self.body) if self.body else 0.0


@dataclass
class PtxKernel:
    name: str
    instrs: list[PtxInstr] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    files: dict[int, str] = field(default_factory=dict)
    maxntid: tuple[int, ...] = ()
    accesses: list[MemAccess] = field(default_factory=list)
    loops: list[tuple[int, int]] = field(default_factory=list)  # (label idx, backward bra idx)
    divergent_barriers: list[tuple[PtxInstr, list[PtxInstr]]] = field(default_factory=list)
    f64_ops: list[PtxInstr] = field(default_factory=list)
    divergent_branches: list[DivergentBranch] = field(default_factory=list)
    branches: int = 0  # conditional branches looked at (the divergence check ran on this many)

    def in_loop(self, idx: int) -> bool:
        return any(a <= idx <= b for a, b in self.loops)

    def calls(self) -> list[tuple[PtxInstr, str]]:
        """Each `call` with its callee (malloc, vprintf, a __noinline__ function's name)."""
        out = []
        for i in self.instrs:
            if i.opcode.startswith("call"):
                callee = next((o for o in i.operands if not o.startswith("(")), "")
                out.append((i, callee))
        return out


def parse_ptx(ptx: str, kernel: str = "") -> PtxKernel:
    """The named entry (the first when "") read by shared/parsers/ptx.py, then its lanes and loops."""
    e = read_entry(ptx, kernel)
    k = PtxKernel(name=e.name, instrs=e.instrs, labels=e.labels, files=e.files, maxntid=e.maxntid)
    for ins in k.instrs:
        if ins.opcode.startswith("bra") and ins.operands and ins.operands[0] in k.labels:
            tgt = k.labels[ins.operands[0]]
            if tgt <= ins.idx:
                k.loops.append((tgt, ins.idx))
    _lanes(k)
    return k


def _imm(s: str) -> int | None:
    return int(s, 0) if _IMM.match(s) else None


def _add(a: Coef, b: Coef) -> Coef:
    for worst in ("IND", "NA", "S"):  # a run-time step plus a known one stays a run-time step
        if worst in (a, b):
            return worst
    assert isinstance(a, int) and isinstance(b, int)
    return a + b


def _scale(a: Coef, k: int) -> Coef:
    if isinstance(a, int):
        return a * k
    return a if k else 0


def _pow2(c: Coef) -> bool:
    return isinstance(c, int) and c > 0 and c & (c - 1) == 0


def _width(opcode: str) -> int:
    parts = opcode.split(".")
    vec = next((int(p[1:]) for p in parts if re.fullmatch(r"v\d", p)), 1)
    bits = next((_BITS[p] for p in reversed(parts) if p in _BITS), 32)
    return vec * bits // 8


def _lanes(k: PtxKernel) -> None:
    coef: dict[str, Coef] = {}
    param: set[str] = set()  # registers holding a kernel parameter or a product with one
    const: dict[str, int] = {}
    two_d: set[str] = set()
    # predicate -> lane-varying (its branch may diverge inside a warp)
    pvary: dict[str, bool] = {}
    # predicate -> "lane" (non-linear in the lane: splits every warp) / "data" (from loaded data)
    psplit: dict[str, str] = {}

    def c(op: str) -> Coef:
        if _imm(op) is not None:
            return 0
        op = op.strip("[]").split("+")[0].strip()
        if op in ("%tid.x",):
            return 1
        if op.startswith("%"):
            return coef.get(op, 0)
        return 0  # symbols (shared arrays), special registers other than %tid.x

    def val(op: str) -> int | None:
        i = _imm(op)
        return i if i is not None else const.get(op)

    for ins in k.instrs:
        base = ins.opcode.split(".")[0]
        ops = ins.operands
        dst = ops[0] if ops else ""
        src = ops[1:]
        if base in ("ld", "st", "atom", "red") and any(
            x in ins.opcode for x in (".global", ".shared", ".local")
        ):
            space = next(s for s in ("global", "shared", "local") if f".{s}" in ins.opcode)
            addr = next((o for o in ops if o.startswith("[")), "")
            reg = addr.strip("[]").split("+")[0].strip()
            kind = {"ld": "load", "st": "store"}.get(base, "atomic")
            k.accesses.append(
                MemAccess(
                    instr=ins,
                    space=space,
                    kind=kind,
                    coef=c(reg) if reg.startswith("%") else 0,
                    width=_width(ins.opcode),
                    two_d=reg in two_d,
                    in_loop=k.in_loop(ins.idx),
                )
            )
            if base != "st" and dst.startswith("%"):
                ac = c(reg) if reg.startswith("%") else 0
                coef[dst] = 0 if ac == 0 and space != "local" and base == "ld" else "IND"
            continue
        if base == "ld" and ".param" in ins.opcode:
            coef[dst], _ = 0, param.add(dst)
            continue
        if (
            ".f64" in ins.opcode
            and base not in ("mov", "ld", "st", "cvt")
            or base == "cvt"
            and ".f64" in ins.opcode
        ):
            k.f64_ops.append(ins)
        if base == "setp":
            pvary[dst] = any(c(o) != 0 for o in src)
            cs = {c(o) for o in src}
            split = "lane" if "NA" in cs else ("data" if "IND" in cs else "")
            # setp with a second predicate output (`%p1|%p2`): both share the condition
            for d in dst.split("|"):
                pvary[d] = pvary[dst]
                if split:
                    psplit[d] = split
            continue
        if base in ("and", "or", "xor", "not") and ".pred" in ins.opcode:
            ps = [o.lstrip("!") for o in src]
            pvary[dst] = any(pvary.get(o, False) for o in ps)
            kinds = {psplit[o] for o in ps if o in psplit}
            if kinds:
                psplit[dst] = "lane" if "lane" in kinds else "data"
            continue
        if base == "bra" and ins.pred:
            continue
        if not dst.startswith("%"):
            continue
        r: Coef
        if base in ("mov", "cvt", "cvta", "neg", "abs") and src:
            r = c(src[0]) if base != "neg" else _scale(c(src[0]), -1)
            if src[0].strip() in param:
                param.add(dst)
            if src[0].strip() in two_d:
                two_d.add(dst)
            v = val(src[0])
            if v is not None:
                const[dst] = v
        elif base in ("add", "sub") and len(src) == 2:
            b = c(src[1])
            r = _add(c(src[0]), _scale(b, -1) if base == "sub" and isinstance(b, int) else b)
            if any(o in two_d for o in src):
                two_d.add(dst)
        elif base in ("mul", "mad", "shl") and len(src) >= 2:
            a, b = src[0], src[1]
            if base == "shl":
                sh = val(b)
                r = _scale(c(a), 1 << sh) if sh is not None else "NA"
                if a in two_d:
                    two_d.add(dst)
            else:
                ca, cb = c(a), c(b)
                va, vb = val(a), val(b)
                if ca == 0 and cb == 0:
                    r = 0
                elif ca != 0 and cb != 0:
                    r = "NA"
                else:
                    lane_c, _other, other_v = (ca, b, vb) if cb == 0 else (cb, a, va)
                    if other_v is not None:
                        r = _scale(lane_c, other_v)
                    elif lane_c in ("IND", "NA"):
                        r = lane_c
                    else:
                        r = "S"
                if (a in param and ca == 0 and va is None and cb == 0 and vb is None and b not in param) or (
                    b in param and cb == 0 and vb is None and ca == 0 and va is None and a not in param
                ):
                    two_d.add(dst)  # parameter x warp-uniform row index: a 2-D row-major address term
                if a in param or b in param:
                    param.add(dst)
                if base == "mad" and len(src) >= 3:
                    r = _add(r, c(src[2]))
                    if src[2] in two_d:
                        two_d.add(dst)
        elif base == "shr" and len(src) == 2:
            sh, ca = val(src[1]), c(src[0])
            if ca == 0:
                r = 0
            elif sh is not None and _pow2(ca):
                s_ = int(ca).bit_length() - 1
                # the lane index sits in bits s_..s_+4: shifted out entirely it is the warp index
                r = 1 << (s_ - sh) if s_ >= sh else (0 if sh >= s_ + 5 else "NA")
            else:
                r = "NA"
        elif base == "and" and len(src) == 2:
            m, ca = val(src[1]), c(src[0])
            if ca == 0:
                r = 0
            elif m is not None and _pow2(ca):
                lane_bits = 31 << (int(ca).bit_length() - 1)
                r = ca if m & lane_bits == lane_bits else (0 if m & lane_bits == 0 else "NA")
            else:
                r = "NA"
        elif base == "or" and len(src) == 2 and 0 in (c(src[0]), c(src[1])):
            r = _add(c(src[0]), c(src[1]))  # the compiler ORs an aligned base with a lane offset
            if any(o in two_d for o in src):
                two_d.add(dst)
        elif base == "bfi" and len(src) >= 2:
            ca, cb = c(src[0]), c(src[1])
            pos = val(src[2]) if len(src) > 2 else None
            r = cb if ca == 0 and pos is not None and pos >= 5 else ("NA" if ca or cb else 0)
        else:
            cs = [c(o) for o in src]
            r = 0 if all(x == 0 for x in cs) else ("IND" if "IND" in cs else "NA")
        coef[dst] = r
    _divergence(k, psplit)
    for ins in k.instrs:
        if not (ins.opcode.startswith("bra") and ins.pred and ins.operands):
            continue
        tgt = k.labels.get(ins.operands[0])
        if tgt is None or tgt <= ins.idx or not pvary.get(ins.pred.lstrip("!"), False):
            continue
        bars = [x for x in k.instrs[ins.idx + 1 : tgt] if x.opcode.startswith(("bar", "barrier"))]
        if bars:
            k.divergent_barriers.append((ins, bars))


def _divergence(k: PtxKernel, psplit: dict[str, str]) -> None:
    """Forward conditional branches on a lane-splitting predicate, with the share of the enclosing loop
    body (or kernel) they guard: the skipped region, and the else side when it ends in `bra END`."""
    for ins in k.instrs:
        if not (ins.opcode.startswith("bra") and ins.pred and ins.operands):
            continue
        tgt = k.labels.get(ins.operands[0])
        if tgt is None or tgt <= ins.idx:
            continue  # a loop's back edge: the trip count, not a split
        k.branches += 1
        kind = psplit.get(ins.pred.lstrip("!"), "")
        if not kind:
            continue
        region = tgt - ins.idx - 1
        last = k.instrs[tgt - 1] if tgt - 1 > ins.idx else None
        if last is not None and last.opcode.startswith("bra") and not last.pred and last.operands:
            end = k.labels.get(last.operands[0])
            if end is not None and end > tgt:
                region += end - tgt  # if/else: both sides run, one after the other
        loop = min(
            (lp for lp in k.loops if lp[0] <= ins.idx <= lp[1]), key=lambda lp: lp[1] - lp[0], default=None
        )
        body = (loop[1] - loop[0] + 1) if loop else len(k.instrs)
        k.divergent_branches.append(DivergentBranch(ins, kind, region, body, loop is not None))
