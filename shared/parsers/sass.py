"""Parse SASS disassembly (nvdisasm -c -gi or cuobjdump -sass) into instructions and a histogram. Pure; the
one reader of this text: the sass tool returns its records, the decomposer reads them per source line.

Both print one instruction per line as `/*0120*/  [@!P0] OPCODE operands ;` (cuobjdump follows each with
its encoding in a `/* 0x... */` comment line). Kernels start at `Function : <name>` (cuobjdump) or at the
`.text.<name>` section (nvdisasm). nvdisasm -g/-gi precedes instructions with
`//## File "<path>", line <n>` (plus ` inlined at ...` with -gi), which applies until the next such line.
"""

from __future__ import annotations

import re
from collections import Counter

from shared.tools.inspect import SassInstruction, SassKernel, SassSummary

_INSTR = re.compile(
    r"^\s*/\*(?P<addr>[0-9a-fA-F]{4,})\*/\s+(?:(?P<pred>@!?U?P[T0-9]+)\s+)?"
    r"(?P<op>[A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)\s*(?P<rest>[^;]*);"
)
_CUOBJDUMP_FN = re.compile(r"^\s*Function\s*:\s*(?P<name>\S+)")
_NVDISASM_FN = re.compile(r"^\.text\.(?P<name>[^:\s]+):")
_LINE = re.compile(r'^\s*//## File "(?P<file>[^"]+)", line (?P<line>\d+)')
_ARCH = re.compile(r"\b(sm_\d+[a-z]?)\b")


def split_operands(rest: str) -> list[str]:
    """Split on commas outside brackets/braces/backquoted labels: `desc[UR4][R2.64+0x800]` stays whole."""
    out, depth, cur, in_tick = [], 0, [], False
    for ch in rest:
        if ch == "`":
            in_tick = not in_tick
        elif not in_tick and ch in "[{(":
            depth += 1
        elif not in_tick and ch in "]})":
            depth -= 1
        if ch == "," and depth == 0 and not in_tick:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    last = "".join(cur).strip()
    if last:
        out.append(last)
    return out


def parse_sass(text: str) -> dict[str, list[SassInstruction]]:
    """Kernel name -> its instructions in address order, for either disassembler's output."""
    kernels: dict[str, list[SassInstruction]] = {}
    current: list[SassInstruction] | None = None
    file: str | None = None
    line: int | None = None
    for raw in text.splitlines():
        if m := (_CUOBJDUMP_FN.match(raw) or _NVDISASM_FN.match(raw)):
            current = kernels.setdefault(m.group("name"), [])
            file = line = None
            continue
        if m := _LINE.match(raw):
            file, line = m.group("file"), int(m.group("line"))
            continue
        if current is None:
            continue
        if m := _INSTR.match(raw):
            current.append(
                SassInstruction(
                    addr=int(m.group("addr"), 16),
                    opcode=m.group("op"),
                    operands=split_operands(m.group("rest")),
                    predicate=m.group("pred"),
                    file=file,
                    line=line,
                )
            )
    return kernels


def arch_of(text: str) -> str:
    """The SM the code is for ("sm_90a"), from cuobjdump's `code for sm_90a` or nvdisasm's headerflags."""
    for raw in text.splitlines()[:20]:
        if ("code for" in raw or raw.strip().startswith(".target")) and (m := _ARCH.search(raw)):
            return m.group(1)
        if m := re.search(r"EF_CUDA_SM(\d+)", raw):
            # EF_CUDA_ACCELERATORS marks arch-specific code (the "a" in sm_90a, needed for wgmma).
            return f"sm_{m.group(1)}" + ("a" if "EF_CUDA_ACCELERATORS" in raw else "")
    return ""


def _width(opcode: str) -> str:
    """Access width in bits from the modifiers: .128/.64 or .U8/.S8/.U16/.S16; 32 when none is given."""
    for mod in opcode.split(".")[1:]:
        if mod in ("128", "64", "32"):
            return mod
        if mod in ("U8", "S8"):
            return "8"
        if mod in ("U16", "S16"):
            return "16"
    return "32"


def summarize(instructions: list[SassInstruction]) -> tuple[dict[str, int], SassSummary]:
    hist = Counter(i.opcode for i in instructions)
    loads: Counter[str] = Counter()
    stores: Counter[str] = Counter()
    copies: Counter[str] = Counter()
    base = Counter()
    predicated = 0
    for i in instructions:
        b = i.opcode.split(".", 1)[0]
        base[b] += 1
        if b == "LDG":
            loads[_width(i.opcode)] += 1
        elif b == "STG":
            stores[_width(i.opcode)] += 1
        elif b == "LDGSTS":
            copies[_width(i.opcode)] += 1
        if i.predicate is not None and i.predicate not in ("@PT", "@UPT"):
            predicated += 1
    summary = SassSummary(
        instructions=len(instructions),
        global_loads=dict(loads),
        global_stores=dict(stores),
        async_copies=dict(copies),
        tma_ops=base["UTMALDG"] + base["UTMASTG"] + base["UBLKCP"],
        shared_loads=base["LDS"] + base["LDSM"],
        shared_stores=base["STS"],
        local_loads=base["LDL"],
        local_stores=base["STL"],
        hgmma=base["HGMMA"],
        hmma=base["HMMA"],
        other_mma=base["IMMA"] + base["DMMA"] + base["IGMMA"] + base["QGMMA"] + base["BGMMA"],
        barriers=base["BAR"],
        global_atomics=base["ATOMG"] + base["RED"] + base["ATOM"],
        shared_atomics=base["ATOMS"],
        shuffles=base["SHFL"],
        branches=base["BRA"] + base["BRX"] + base["JMP"],
        predicated=predicated,
    )
    return dict(hist), summary


def kernels_from_text(text: str, *, include_instructions: bool = True) -> list[SassKernel]:
    out = []
    for name, instrs in parse_sass(text).items():
        hist, summary = summarize(instrs)
        out.append(
            SassKernel(
                name=name,
                histogram=hist,
                summary=summary,
                instructions=instrs if include_instructions else [],
                has_line_info=any(i.line is not None for i in instrs),
            )
        )
    return out
