"""Which lane of which warp touches which tensor element, and what that costs in 32 B sectors. Pure numpy.

A `#ttg.blocked` layout places element coordinates on (register, lane, warp): along each dim d a thread
holds sizePerThread[d] neighbours, threadsPerWarp[d] lanes and warpsPerCTA[d] warps tile that, and the
CTA tile repeats until it covers the tensor; lane and warp ids are split over dims fastest-first in
`order`. Where the tile is larger than the tensor, coordinates wrap (several lanes hold one element).

One warp-level memory instruction (one "request", as ncu's l1tex__t_requests counts it) moves one vector
of `vec` consecutive registers along order[0] for all 32 lanes. Its cost is the number of distinct 32 B
sectors its active lanes touch (GPU.md: 32 B sectors; a perfect fp32 request of 32 lanes x 4 B is 4).
Stores of a wrapped (broadcast) element happen once: Triton masks the redundant lanes; loads do not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from shared.parsers.ttgir_memops import BlockedLayout

WARP = 32  # lanes per warp on every NVIDIA GPU Triton targets
SECTOR = 32  # bytes per L1/L2 sector (GPU.md, "memory")


@dataclass(frozen=True)
class LanePlan:
    """For each request r, lane l and vector slot k: the flat (row-major) element index it touches and
    whether it counts (False for a store's redundant copy)."""

    flat: np.ndarray  # int64 [requests, 32, vec]
    owner: np.ndarray  # bool [requests, 32, vec]


def _split(i: np.ndarray, sizes: tuple[int, ...], order: tuple[int, ...]) -> list[np.ndarray]:
    """Split a linear lane or warp id into per-dim coordinates, dims fastest-first in `order`."""
    coords: list[np.ndarray] = [np.zeros_like(i) for _ in sizes]
    rest = i.copy()
    for d in order:
        coords[d] = rest % sizes[d]
        rest = rest // sizes[d]
    return coords


@lru_cache(maxsize=256)
def lane_plan(layout: BlockedLayout, shape: tuple[int, ...], num_warps: int, vec: int,
              is_store: bool) -> LanePlan:
    """The request/lane/slot -> element map of one memory op. `vec` is in elements along order[0]."""
    spt, tpw, wpc, order = layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta, layout.order
    eff = list(shape)
    if layout.sliced_dim is not None:  # a slice: the parent's dim is present with extent 1 (broadcast)
        eff.insert(layout.sliced_dim, 1)
    rank = len(eff)
    if not (len(spt) == len(tpw) == len(wpc) == len(order) == rank):
        raise ValueError(f"layout rank {len(spt)} does not match tensor shape {list(shape)}")
    if math.prod(tpw) != WARP or math.prod(wpc) != num_warps:
        raise ValueError(f"layout threadsPerWarp {list(tpw)} / warpsPerCTA {list(wpc)} do not multiply to "
                         f"{WARP} / num_warps={num_warps}")
    o0 = order[0]
    if vec < 1 or spt[o0] % vec:
        raise ValueError(f"vector width {vec} does not divide sizePerThread[{o0}] = {spt[o0]}")
    tile = [spt[d] * tpw[d] * wpc[d] for d in range(rank)]
    reps = [max(1, -(-eff[d] // tile[d])) for d in range(rank)]
    slots = [spt[d] // vec if d == o0 else spt[d] for d in range(rank)]
    # axes: warp, reps[0..r), slots[0..r), lane, k
    grids = np.meshgrid(np.arange(num_warps), *[np.arange(n) for n in reps], *[np.arange(n) for n in slots],
                        np.arange(WARP), np.arange(vec), indexing="ij")
    w, rep, slot, lane, k = grids[0], grids[1:1 + rank], grids[1 + rank:1 + 2 * rank], grids[-2], grids[-1]
    wc, lc = _split(w, wpc, order), _split(lane, tpw, order)
    coords, inside = [], np.ones(w.shape, dtype=bool)
    for d in range(rank):
        s = slot[d] * vec + k if d == o0 else slot[d]
        c = rep[d] * tile[d] + wc[d] * (spt[d] * tpw[d]) + lc[d] * spt[d] + s
        inside &= c < eff[d]
        coords.append(c % eff[d])
    flat = np.ravel_multi_index(coords, eff).reshape(-1, WARP, vec)
    owner = inside.reshape(-1, WARP, vec) if is_store else np.ones(flat.shape, dtype=bool)
    return LanePlan(flat=flat.astype(np.int64), owner=owner)


def scalar_plan(num_warps: int, is_store: bool) -> LanePlan:
    """A scalar pointer: every lane of every warp reads the one address; one thread stores it."""
    flat = np.zeros((num_warps, WARP, 1), dtype=np.int64)
    owner = np.ones(flat.shape, dtype=bool)
    if is_store:
        owner[:] = False
        owner[0, 0, 0] = True
    return LanePlan(flat=flat, owner=owner)


@dataclass
class AccessTally:
    """Running totals for one memory instruction over the programs analysed."""

    executions: int = 0  # times a program executed it
    requests: int = 0  # warp-level requests with at least one active lane
    sectors: int = 0  # distinct 32 B sectors per request, summed
    ideal_sectors: int = 0  # ceil(bytes requested / 32) per request, summed: the coalesced minimum
    active_lanes: int = 0  # over all requests
    bytes_requested: int = 0  # distinct bytes the active lanes asked for, per request, summed

    def add(self, other: AccessTally) -> None:
        for f in ("executions", "requests", "sectors", "ideal_sectors", "active_lanes", "bytes_requested"):
            setattr(self, f, getattr(self, f) + getattr(other, f))


def tally(plan: LanePlan, addresses: np.ndarray, mask: np.ndarray, elem_bytes: int) -> AccessTally:
    """Cost of one execution: `addresses` (uint64 byte addresses) and `mask` are flat, row-major."""
    a = addresses.reshape(-1)[plan.flat]
    m = mask.reshape(-1)[plan.flat] & plan.owner
    lane_on = m.any(axis=2)
    req_on = lane_on.any(axis=1)
    out = AccessTally(executions=1, requests=int(req_on.sum()), active_lanes=int(lane_on.sum()))
    if not out.requests:
        return out
    req_idx = np.broadcast_to(np.arange(a.shape[0])[:, None, None], a.shape)[m].astype(np.uint64)
    addr = a[m]
    addr = addr - addr.min()
    # Offsets below 2^40 (1 TiB) never collide with the request index in the high bits: no allocation
    # an access spans comes close.
    sectors = np.unique((req_idx << np.uint64(40)) | (addr // np.uint64(SECTOR)))
    out.sectors = int(sectors.size)
    # Bytes used: distinct elements per request (lanes holding a broadcast copy read the same bytes).
    elems = np.unique((req_idx << np.uint64(40)) | addr)
    per_req_bytes = np.bincount((elems >> np.uint64(40)).astype(np.int64)) * elem_bytes
    per_req_bytes = per_req_bytes[per_req_bytes > 0]
    out.bytes_requested = int(per_req_bytes.sum())
    out.ideal_sectors = int((-(-per_req_bytes // SECTOR)).sum())
    return out
