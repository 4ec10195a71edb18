"""Global memory accesses in PTX: the bytes one lane moves per `ld.global` / `st.global` / `cp.async`
instruction (`ld.global.v4.b32` = 16 B), per `.loc` source location. This is how wide the compiler actually
vectorised an op (the TTGIR layout's sizePerThread is an upper bound; alignment and masks can make it
narrower). The one reader of these widths: the toolrunner's mem_access_profile and the decomposer.
"""

from __future__ import annotations

import re
from collections import Counter

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
    (the most common width when several instructions share the location)."""
    files: dict[str, str] = {m.group(1): m.group(2) for m in map(_PTX_FILE.match, ptx.splitlines()) if m}
    seen: dict[tuple[str, int, int], Counter[int]] = {}
    where: tuple[str, int, int] | None = None
    for ln in ptx.splitlines():
        if m := _PTX_LOC.match(ln):
            where = (files.get(m.group(1), m.group(1)), int(m.group(2)), int(m.group(3)))
            continue
        if where is None:
            continue
        nbytes = None
        if m := _PTX_LDST.search(ln):
            nbytes = int(m.group(2) or 1) * int(m.group(3)) // 8
        elif m := _PTX_CPASYNC.search(ln):
            nbytes = int(m.group(1))
        if nbytes:
            seen.setdefault(where, Counter())[nbytes] += 1
    return {k: c.most_common(1)[0][0] for k, c in seen.items()}
