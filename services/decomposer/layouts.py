"""Decode TTGIR layout attributes (#blocked, #shared, #mma, slices, dot operands) into LayoutInfo."""

from __future__ import annotations

import re

from shared.tools.decompose import LayoutInfo

_KIND = re.compile(r"#(?:ttg|ttng|triton_gpu)\.(\w+)")


def _ints(text: str, key: str) -> list[int]:
    m = re.search(rf"\b{key}\s*=\s*\[([^\]]*)\]", text)
    return [int(x) for x in re.findall(r"-?\d+", m.group(1))] if m else []


def _int(text: str, key: str) -> int | None:
    m = re.search(rf"\b{key}\s*=\s*(-?\d+)", text)
    return int(m.group(1)) if m else None


def decode(name: str, text: str) -> LayoutInfo:
    m = _KIND.match(text.strip())
    kind = m.group(1) if m else "other"
    tr = re.search(r"\btransposed\s*=\s*(true|false)", text)
    return LayoutInfo(
        name=name,
        kind=kind,
        size_per_thread=_ints(text, "sizePerThread"),
        threads_per_warp=_ints(text, "threadsPerWarp"),
        warps_per_cta=_ints(text, "warpsPerCTA"),
        order=_ints(text, "order"),
        vec=_int(text, "vec"),
        per_phase=_int(text, "perPhase"),
        max_phase=_int(text, "maxPhase"),
        swizzle_bytes=_int(text, "swizzlingByteWidth"),
        transposed=None if tr is None else tr.group(1) == "true",
        mma_version=_int(text, "versionMajor"),
        instr_shape=_ints(text, "instrShape"),
    )


def decode_all(aliases: dict[str, str]) -> dict[str, LayoutInfo]:
    return {k: decode(k, v) for k, v in aliases.items() if _KIND.match(v.strip())}


def resolve(layout: str, table: dict[str, LayoutInfo]) -> tuple[LayoutInfo | None, int | None]:
    """The base layout of a type's layout string and, for a slice, the sliced-away dim.

    `#ttg.slice<{dim = 1, parent = #blocked}>` -> (#blocked, 1); `#blocked1` -> (#blocked1, None);
    `#ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>` -> (#mma, None).
    """
    s = layout.strip()
    if s in table:
        return table[s], None
    m = re.search(r"parent\s*=\s*(#[\w.$-]+)", s)
    if m:
        base, _ = resolve(m.group(1), table)
        return base, _int(s, "dim") if "slice" in s else None
    if s.startswith(("#ttg.", "#ttng.")):
        return decode(s, s), None
    return None, None


def fastest_dim(layout: LayoutInfo, rank: int, sliced: int | None) -> int | None:
    """The tensor dim consecutive lanes walk first (order[0] of the base layout, slice-adjusted)."""
    if not layout.order:
        return None
    for d in layout.order:
        if sliced is not None:
            if d == sliced:
                continue
            d2 = d - 1 if d > sliced else d
        else:
            d2 = d
        if d2 < rank:
            return d2
    return None


def elems_per_thread(layout: LayoutInfo, dim: int, sliced: int | None) -> int:
    spt = layout.size_per_thread
    if not spt:
        return 1
    d = dim + 1 if sliced is not None and dim >= sliced else dim
    return spt[d] if d < len(spt) else 1


def threads_per_warp_along(layout: LayoutInfo, dim: int, sliced: int | None) -> int:
    tpw = layout.threads_per_warp
    d = dim + 1 if sliced is not None and dim >= sliced else dim
    return tpw[d] if d < len(tpw) else 1


def warps_along(layout: LayoutInfo, dim: int) -> int:
    w = layout.warps_per_cta
    return w[dim] if dim < len(w) else 1
