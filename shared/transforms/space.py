"""A SPACE for a task that brings none: derived from its CONFIG's tl.constexpr block sizes and launch
options, so a kernel captured or written without a search space is still tunable.

Block sizes (powers of two named BLOCK*/TILE*/*_SIZE or a kernel's constexpr) range from a quarter to
eight times their start, within 16..8192 (a Triton tensor dimension is a power of two; 8192 fp32 is
the widest row block the suite measured). num_warps ranges over 1..16 around the start (32 warps = 1024
threads, GPU.md, leaves no registers for a tile), num_stages over 1..5. Everything else keeps its one
value: a flag or a count the search must not guess.
"""

from __future__ import annotations

import re

from shared.messages import Scalar

BLOCK_NAME = re.compile(r"^(BLOCK|BLK|TILE|XBLOCK|RBLOCK|B)(_?\w*)?$|_SIZE(_\w+)?$|^BS_?\w*$", re.IGNORECASE)
MIN_BLOCK, MAX_BLOCK = 16, 8192


def _pow2(v: Scalar) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0 and v & (v - 1) == 0


def derive_space(config: dict[str, Scalar], constexprs: list[str] | None = None) -> dict[str, list[Scalar]]:
    """`constexprs`: the kernel's tl.constexpr parameter names (a power-of-two CONFIG value under one of
    them is taken as a block size even when its name says nothing)."""
    out: dict[str, list[Scalar]] = {}
    names = set(constexprs or [])
    for k, v in config.items():
        if k == "num_warps" and _pow2(v):
            out[k] = sorted({1, 2, 4, 8, 16} | {v})  # type: ignore[arg-type]
        elif k == "num_stages" and isinstance(v, int):
            out[k] = sorted({1, 2, 3, 4, 5} | {v})
        elif k == "maxnreg" or isinstance(v, bool):
            out[k] = [v]
        elif _pow2(v) and (BLOCK_NAME.search(k) or k in names) and v >= 2:
            lo, hi = max(min(MIN_BLOCK, v), v // 4), min(max(MAX_BLOCK, v), v * 8)  # type: ignore[operator]
            out[k] = [x for x in (2**i for i in range(14)) if lo <= x <= hi]
        else:
            out[k] = [v]
    return out
