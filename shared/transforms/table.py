"""The transformation table and its one entry point, `apply(source, name, params, kernel)`.

Each row is a module of shared/transforms/ exporting TRANSFORM (its spec + rewrite). A rewrite whose
precondition does not hold raises TransformError; `apply` returns that as `Refused` with the reason.
"""

from __future__ import annotations

import difflib

import msgspec

from shared.messages import Scalar
from shared.transforms import (
    aligned_copies,
    causal_tile_skip,
    chunk_max,
    cuda_launch_bounds,
    cuda_smem_pad,
    cuda_tiled_transpose,
    even_k,
    eviction_policy,
    exp2_fold,
    fuse_epilogue,
    grouped_order,
    k_pipeline,
    persistent,
    relayout_intermediate,
    rows_per_program,
    sparse_block_skip,
    split_k,
    split_key_loop,
    tiled_transpose,
    tma_loads,
    two_stage_reduce,
)
from shared.transforms.base import Applied, Refused, Transform, TransformError, TransformSpec

TABLE: tuple[Transform, ...] = (
    grouped_order.TRANSFORM,  # GEMM: GROUP_M tile order, L2 reuse of B tiles
    k_pipeline.TRANSFORM,  # GEMM/attention: tl.range(num_stages=) on the K loop -> cp.async prefetch
    even_k.TRANSFORM,  # GEMM: unmasked interior K tiles, one masked tail tile
    split_k.TRANSFORM,  # GEMM K loop, column sums: SPLIT_K programs per tile, fp32 partials summed in a fixed order
    aligned_copies.TRANSFORM,  # odd leading dimensions: zero-padded copies with an aligned row pitch
    rows_per_program.TRANSFORM,  # row kernels: ROWS rows per program, fewer tiny programs
    persistent.TRANSFORM,  # one wave of programs striding over the tiles
    exp2_fold.TRANSFORM,  # softmax/attention: exp -> exp2 with log2(e) folded into the scale
    causal_tile_skip.TRANSFORM,  # causal attention: the key loop stops at the block's last query row
    split_key_loop.TRANSFORM,  # attention: unmasked full key tiles, masked diagonal/boundary tiles
    sparse_block_skip.TRANSFORM,  # block-sparse attention: branch over blocks the layout masks out
    chunk_max.TRANSFORM,  # online softmax/logsumexp rows: chunk max first, one rescale exp per chunk
    tiled_transpose.TRANSFORM,  # row/column kernels: TILE rows per program, 2-D tiles joined by tl.trans
    eviction_policy.TRANSFORM,  # streaming loads: evict_first keeps L2 for the data that is reused
    two_stage_reduce.TRANSFORM,  # atomics on one address -> per-program partials + a fixed-order sum
    cuda_launch_bounds.TRANSFORM,  # CUDA C++: registers allocated for the real block size
    cuda_smem_pad.TRANSFORM,  # CUDA C++: +1 column on 2-D shared tiles against bank conflicts
    tma_loads.TRANSFORM,  # Hopper GEMM: A/B tiles through TMA tensor descriptors (cp.async.bulk.tensor)
    relayout_intermediate.TRANSFORM,  # cross-kernel: an intermediate allocated so its consumer's lanes read contiguously
    fuse_epilogue.TRANSFORM,  # cross-kernel: an elementwise consumer kernel folded into its producer's store
    cuda_tiled_transpose.TRANSFORM,  # CUDA C++: a naive transpose's copy staged through a shared tile
)
BY_NAME: dict[str, Transform] = {t.spec.name: t for t in TABLE}


def specs() -> list[TransformSpec]:
    return [t.spec for t in TABLE]


def records() -> list[dict]:
    """The table as plain records (JSON-ready): what `kpilot transforms --json` prints and what the llm
    policy offers the model as `change = transform` kinds."""
    return [msgspec.to_builtins(s) for s in specs()]


def answering(pattern: str) -> list[TransformSpec]:
    """The transformations that answer a decomposer pattern id, in table order."""
    return [t.spec for t in TABLE if pattern in t.spec.answers]


def check_params(spec: TransformSpec, params: dict[str, Scalar]) -> str | None:
    known = {p.name: p for p in spec.params}
    for k, v in params.items():
        if k not in known:
            return f"{spec.name} has no parameter {k!r}; its parameters: {sorted(known) or 'none'}"
        if v not in known[k].domain:
            return f"{spec.name}: {k}={v!r} is outside its domain {known[k].domain}"
    return None


def resolve(spec: TransformSpec, params: dict[str, Scalar]) -> dict[str, Scalar]:
    """Every parameter with its value: the given one or its default."""
    return {p.name: params.get(p.name, p.default) for p in spec.params}


def unified_diff(old: str, new: str, name: str = "task.py") -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=f"a/{name}", tofile=f"b/{name}"))


def apply(source: str, name: str, params: dict[str, Scalar] | None = None, kernel: str = "",
          filename: str = "task.py") -> Applied | Refused:
    t = BY_NAME.get(name)
    if t is None:
        close = difflib.get_close_matches(name, list(BY_NAME), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return Refused(transform=name, reason=f"unknown transformation{hint}; `kpilot transforms` lists them")
    why = check_params(t.spec, params or {})
    if why is not None:
        return Refused(transform=name, reason=why)
    full = resolve(t.spec, params or {})
    try:
        out = t.rewrite(source, full, kernel)
    except TransformError as e:
        return Refused(transform=name, reason=str(e))
    if out == source:
        return Refused(transform=name, reason="the rewrite changes nothing here")
    return Applied(transform=name, params=full, source=out, diff=unified_diff(source, out, filename),
                   kernel=kernel)
