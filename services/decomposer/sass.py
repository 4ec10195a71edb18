"""SASS (nvdisasm --print-line-info, or cuobjdump -sass) and `ptxas -v` output as the decomposer uses them,
read by the parsers the toolrunner's tools use (shared/parsers/sass.py, shared/parsers/ptxas.py).

With nvdisasm line info (`//## File "k.py", line 23`) instructions are attributed to source lines;
cuobjdump text has no line info, so only whole-kernel counts are available (attributed to line 0).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from shared.parsers.ptx import global_load_bits
from shared.parsers.ptxas import kernel_info
from shared.parsers.sass import parse_sass as parse_kernels
from shared.tools.decompose import PtxasInfo, SassLine

_TENSOR = ("HGMMA", "HMMA", "IMMA", "QGMMA", "IGMMA", "UTMALDG", "UTMASTG")
_WIDTH = {"U8": 8, "S8": 8, "U16": 16, "S16": 16, "64": 64, "128": 128}


@dataclass(frozen=True)
class Instr:
    addr: str
    opcode: str  # full mnemonic with modifiers, "LDG.E.128"
    predicated: bool
    file: str
    line: int
    operands: str


@dataclass
class Sass:
    instrs: list[Instr] = field(default_factory=list)
    has_line_info: bool = False
    kernels: list[str] = field(default_factory=list)

    def counts(self) -> Counter[str]:
        return Counter(i.opcode.split(".")[0] for i in self.instrs)


def access_bits(opcode: str) -> int:
    """LDG.E.128 -> 128; LDG.E -> 32; LDG.E.U16 -> 16; LDG.E.64 -> 64."""
    parts = opcode.split(".")[1:]
    for p in parts:
        if p in _WIDTH:
            return _WIDTH[p]
    return 32


def parse_sass(text: str, kernel: str = "") -> Sass:
    """`text`'s instructions (of `kernel` only, when named) as the sass tool reads them (shared/parsers/sass.py),
    with the kernels the text holds and whether it carries line info."""
    out = Sass()
    for name, instrs in parse_kernels(text).items():
        out.kernels.append(name)
        out.has_line_info = out.has_line_info or any(i.file is not None for i in instrs)
        if kernel and name != kernel:
            continue
        out.instrs += [Instr(f"0x{i.addr:04x}", i.opcode, i.predicate is not None, i.file or "", i.line or 0,
                             ", ".join(i.operands)) for i in instrs]
    return out


def per_line(sass: Sass) -> list[SassLine]:
    rows: dict[tuple[str, int], SassLine] = {}
    for ins in sass.instrs:
        key = (ins.file, ins.line)
        row = rows.get(key)
        if row is None:
            row = rows[key] = SassLine(file=ins.file, line=ins.line, first_addr=ins.addr)
        row.instructions += 1
        base = ins.opcode.split(".")[0]
        if base == "LDG":
            row.ldg_bits.append(access_bits(ins.opcode))
        elif base == "STG":
            row.stg_bits.append(access_bits(ins.opcode))
        elif base.startswith(_TENSOR):
            if ins.opcode not in row.tensor_instrs:
                row.tensor_instrs.append(ins.opcode)
        elif base in ("BAR", "SYNCS", "DEPBAR", "WARPSYNC") or base.startswith("WARPGROUP"):
            row.barriers += 1
        elif base in ("LDS", "STS", "LDSM", "STSM", "LDGSTS"):
            row.shared_accesses += 1
        elif base in ("LDL", "STL"):
            row.local_accesses += 1
        elif base in ("ATOM", "ATOMG", "RED", "ATOMS"):
            row.atomics += 1
    return sorted(rows.values(), key=lambda r: (r.file, r.line))


def parse_ptxas(text: str, kernel: str = "") -> PtxasInfo | None:
    """`ptxas -v` stderr -> registers, spills, stack, smem (shared/parsers/ptxas.py reads it). None when
    the text has no `Used N registers` for the kernel."""
    return kernel_info(text, kernel)


def ptx_vector_loads(ptx: str) -> Counter[int]:
    """Global load widths in bits from PTX (`ld.global.v4.b32` -> 128), for SASS-less inputs
    (shared/parsers/ptx.py reads them)."""
    return global_load_bits(ptx)
