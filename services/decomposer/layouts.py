"""Layout geometry of decoded TTGIR layouts (LayoutInfo, decoded by shared/parsers/ttgir.py): which tensor dim
consecutive lanes walk, elements per thread, threads and warps along a dim."""

from __future__ import annotations

from shared.tools.decompose import LayoutInfo


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
