"""PTX read once: a kernel entry's instructions with their source locations, and global access widths.

`read_entry` gives an `.entry`'s instructions (opcode, predicate, operands, the source line of their `.loc`,
`inlined_at` resolved to the caller's line, and the `.loc`'s own file:line:col), labels, `.file` table and
`.maxntid`: the decomposer's lane analysis (services/decomposer/ptx_lanes.py) works on it. `entry_names`
lists a module's entries (the compile tool's CUDA path). `ptx_access_bytes` gives the bytes one lane moves
per `ld.global` / `st.global` / `cp.async` instruction (`ld.global.v4.b32` = 16 B) per `.loc` location:
how wide the compiler actually vectorised an op (the TTGIR layout's sizePerThread is an upper bound;
alignment and masks can make it narrower), read by the toolrunner's mem_access_profile; the decomposer
counts `global_load_bits`.
"""

from __future__ import annotations

import re
from collections import Counter

import msgspec

_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)")
_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]+)"')
# ld.global[.nc][.L1::evict_last...][.v2|.v4].b32 / st.global...; cp.async.cg.shared.global [..], [..], 16
_PTX_LDST = re.compile(r"\b(ld|st)\.global(?:\.[\w:]+)*?(?:\.v(\d))?\.(?:b|u|s|f)(\d+)\b")
_PTX_CPASYNC = re.compile(r"\bcp\.async\.\w+\.shared\.global\s+\[[^\]]*\],\s*\[[^\]]*\],\s*(\d+)")


def global_load_bits(ptx: str) -> Counter[int]:
    """Global load widths in bits, whole text (`ld.global.v4.b32` -> 128: 1 count per instruction)."""
    out: Counter[int] = Counter()
    for m in _PTX_LDST.finditer(ptx):
        if m.group(1) == "ld":
            out[int(m.group(2) or 1) * int(m.group(3))] += 1
    return out


def ptx_access_bytes(ptx: str) -> dict[tuple[str, int, int], int]:
    """(file, line, col) -> bytes one lane moves per global memory instruction at that source location
    (the most common width when several instructions share the location), over every entry."""
    seen: dict[tuple[str, int, int], Counter[int]] = {}
    for name in entry_names(ptx):
        for ins in read_entry(ptx, name).instrs:
            if not ins.at[0] and not ins.at[1]:
                continue
            nbytes = None
            if m := _PTX_LDST.search(ins.text):
                nbytes = int(m.group(2) or 1) * int(m.group(3)) // 8
            elif m := _PTX_CPASYNC.search(ins.text):
                nbytes = int(m.group(1))
            if nbytes:
                seen.setdefault(ins.at, Counter())[nbytes] += 1
    return {k: c.most_common(1)[0][0] for k, c in seen.items()}


_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([A-Za-z_$][\w$]*)", re.MULTILINE)
_LOC = re.compile(r"^\.loc\s+(\d+)\s+(\d+)\s+(\d+)(?:.*inlined_at\s+(\d+)\s+(\d+)\s+\d+)?")
_FILE = re.compile(r'^\.file\s+(\d+)\s+"([^"]*)"')
_LABEL = re.compile(r"^(\$?[\w$]+):\s*$")
_INSTR = re.compile(r"^(@!?%\w+\s+)?([a-z][\w.]*)\s*(.*?);")
_BRACE = re.compile(r"[{}]")
_CALL = re.compile(r"\bcall(?:\.uni)?\s[^;]*;")


class PtxInstr(msgspec.Struct, frozen=True):
    idx: int
    opcode: str  # "ld.global.v4.b32"
    pred: str  # "%p1" / "!%p1" / ""
    operands: tuple[str, ...]
    file: str  # the source line's file and line: the caller's for an inlined function (`inlined_at`)
    line: int
    at: tuple[str, int, int] = ("", 0, 0)  # the `.loc`'s own file, line, col (the callee's when inlined)
    text: str = ""  # the statement


class PtxEntry(msgspec.Struct):
    name: str
    header: str  # between `.entry` and the body's `{`: parameters, .maxntid, ...
    instrs: list[PtxInstr] = msgspec.field(default_factory=list)
    labels: dict[str, int] = msgspec.field(default_factory=dict)  # label -> index of the next instruction
    files: dict[int, str] = msgspec.field(default_factory=dict)  # `.file` number -> path
    maxntid: tuple[int, ...] = ()


def entry_names(ptx: str) -> list[str]:
    """Kernel entry names in a PTX module, in order."""
    return _ENTRY.findall(ptx)


def _entry_body(ptx: str, kernel: str) -> tuple[str, str, str]:
    """(name, header between `.entry` and `{`, body) of the named entry (the first when "")."""
    for m in re.finditer(r"\.entry\s+([\w$]+)\s*\(", ptx):
        name = m.group(1)
        if kernel and name != kernel:
            continue
        start = ptx.find("{", m.end())
        depth, i = 0, len(ptx)
        for b in _BRACE.finditer(ptx, start):
            depth += 1 if b.group() == "{" else -1
            if depth == 0:
                i = b.start()
                break
        return name, ptx[m.end() : start], ptx[start + 1 : i]
    raise ValueError(
        f"no .entry {kernel!r} in the PTX" if kernel else "no .entry in the PTX: pass the compile tool's PTX"
    )


def _split_operands(text: str) -> list[str]:
    if "[" not in text and "{" not in text:
        return [t for t in text.split(",") if t.strip()]
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def read_entry(ptx: str, kernel: str = "") -> PtxEntry:
    """One `.entry` (the first when kernel is ""); ValueError naming the fix when there is none."""
    name, header, body = _entry_body(ptx, kernel)
    k = PtxEntry(name=name, header=header)
    for raw in ptx.splitlines():
        fm = _FILE.match(raw.strip())
        if fm:
            k.files[int(fm.group(1))] = fm.group(2)
    nt = re.search(r"\.maxntid\s+([\d,\s]+)", header)
    if nt:
        k.maxntid = tuple(int(x) for x in nt.group(1).replace(" ", "").split(",") if x)
    file, line, at = "", 0, ("", 0, 0)
    body = _CALL.sub(lambda m: " ".join(m.group().split()), body)  # a call statement spans lines
    for raw in body.splitlines():
        s = raw.strip()
        if not s or s.startswith("//"):
            continue
        lm = _LOC.match(s)
        if lm:
            fno, ln = (lm.group(4), lm.group(5)) if lm.group(4) else (lm.group(1), lm.group(2))
            file, line = k.files.get(int(fno), fno), int(ln)
            at = (k.files.get(int(lm.group(1)), lm.group(1)), int(lm.group(2)), int(lm.group(3)))
            continue
        lb = _LABEL.match(s)
        if lb:
            k.labels[lb.group(1)] = len(k.instrs)
            continue
        if s.startswith("."):
            continue
        im = _INSTR.match(s)
        if not im:
            continue
        ops = tuple(o.strip() for o in _split_operands(im.group(3)))
        k.instrs.append(PtxInstr(len(k.instrs), im.group(2), (im.group(1) or "").strip()[1:], ops, file, line,
                                 at, s))
    return k
