"""What a transformation would change, estimated from the task alone (its shapes, CONFIG, SPACE and the
launch_grid record in the context), so the rules policy can try first the transformations likely to win:
a job measures only two or three candidates in its budget.

Two estimates, each the factor by which the limit a transformation lifts would move (1.0 = it changes
nothing here; None = nothing to estimate from), with the sentence that says why:

* Parallelism (the transformations that answer the decomposer's `small_grid`, i.e. add programs per
  output tile): the programs each config of the SPACE launches at the full shape (the task's own grid from
  the launch_grid tool where recorded, else the search's shape model) against the GPU's SMs, the
  decomposer's small-grid rule (fewer programs than SMs). A grid under one program per SM at the start, or
  in part of the SPACE the config search walks, is what such a transformation fills.
* Load width (`aligned_copies`): the widest vector (at most 16 B, a 128-bit load) a row can be read with
  when its pitch is one of the full shape's extents. An extent whose bytes are not a multiple of 16 keeps
  loads narrower; padding the pitch to ALIGN elements lifts that, and an extent already aligned leaves
  nothing to lift. Which extent is a row pitch is not read from the task (make_inputs is code), so the
  narrowest over all extents is taken: an upper bound on what padding can give.

Pure: no task code runs. The GPU's SM count comes from shared/gpu_facts.py (GPU.md).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import msgspec

from services.planner.search import (
    DTYPE_BYTES,
    Config,
    Problem,
    all_configs,
    config_key,
    estimate,
    prior,
    prune_reasons,
)
from shared.gpu_facts import H200, GpuFacts
from shared.messages import Scalar
from shared.transforms.base import TransformSpec

VECTOR_BYTES = 16  # the widest global load a thread issues: 128 bits (ld.global.v4.b32)
# A global-memory transaction's cache line (GPU.md: 128-byte L1/L2 lines of four 32-byte sectors): rows that
# start on one read whole lines per tile row. On the H200 the irregular GEMM's aligned copies gained 1.975x
# with rows padded to 64 bf16 (128 B, run r32) and lost (0.944x) with rows padded to 8 (16 B, run r40).
LINE_BYTES = 128
MAX_CONFIGS = 10_000  # SPACE configs scanned for the grid estimate (the launch_grid tool's request limit)


class Effect(msgspec.Struct, frozen=True, kw_only=True):
    factor: float | None  # the estimated factor on the limit it lifts; 1.0 = changes nothing; None = unknown
    why: str
    # The parameters that reach the estimate (proposed first), and the parameter names whose other values
    # reach the same estimate (trivial variants: not proposed in the first round).
    params: dict[str, Scalar] = {}
    same_for: list[str] = []
    # The config of the SPACE the estimate holds at, when it is not the start's ({} = the start's): the
    # candidate is proposed there, since at the start it would change nothing.
    config: Config = {}


UNKNOWN = Effect(factor=None, why="the decomposer's finding order")


def vector_bytes(extent: int, elem: int) -> int:
    """The widest power-of-two load (bytes, at most 16) that a row pitch of `extent` elements keeps aligned."""
    b = VECTOR_BYTES
    while b > 1 and (extent * elem) % b:
        b //= 2
    return b


def load_width(spec: TransformSpec, full_shape: dict[str, int], dtype: str) -> Effect:
    """aligned_copies' effect: the narrowest load an extent of the full shape leaves, against 16 B."""
    elem = DTYPE_BYTES.get(dtype, 4)
    dims = {k: v for k, v in full_shape.items() if v > 1}
    if not dims:
        return UNKNOWN
    name, ext = min(dims.items(), key=lambda kv: (vector_bytes(kv[1], elem), kv[0]))
    now = vector_bytes(ext, elem)
    if now >= VECTOR_BYTES:
        return Effect(factor=1.0, same_for=[q.name for q in spec.params if q.name == "align"],
                      why=f"every full-shape extent x {elem} B is a multiple of {VECTOR_BYTES} B: rows already "
                          "allow 128-bit loads, padding them changes nothing")
    domain = {q.name: q.domain for q in spec.params}
    aligning = [v for v in domain.get("align", []) if isinstance(v, int) and (v * elem) % VECTOR_BYTES == 0]
    params: dict[str, Scalar] = {}
    if aligning:
        # the least padding that starts every row on a cache line, else the widest the domain has
        lines = [v for v in aligning if (v * elem) % LINE_BYTES == 0]
        params["align"] = min(lines) if lines else max(aligning)
    if 1 in domain.get("extents", []):
        params["extents"] = 1  # sizes padded too: masks along the rows get divisible bounds as well
    # alignments that start rows on the same kind of boundary (16 B vectors only, or whole lines) read alike
    same = ["align"] if len({(v * elem) % LINE_BYTES == 0 for v in aligning}) == 1 and len(aligning) > 1 else []
    return Effect(factor=VECTOR_BYTES / now, params=params, same_for=same,
                  why=f"full-shape extent {name} = {ext} x {elem} B allows only {now}-byte loads; rows padded "
                      f"to {params.get('align', '?')} elements allow {VECTOR_BYTES}-byte (128-bit) loads"
                      + (f" from {LINE_BYTES}-byte line starts" if params.get("align") and
                         int(params["align"]) * elem % LINE_BYTES == 0 else ""))


def _programs(configs: Sequence[Config], p: Problem, gpu: GpuFacts) -> list[tuple[Config, int]]:
    """(config, programs at the full shape) of each config the search would not prune."""
    out = []
    for c in configs:
        if prune_reasons(c, p, gpu):
            continue
        n = estimate(c, p, gpu).programs
        if n is not None:
            out.append((c, n))
    return out


def _best_after(short: list[tuple[Config, int]], times: int, p: Problem, gpu: GpuFacts) -> Config:
    """The short-grid config the search's prior ranks first once its programs are multiplied `times`."""
    def after(c: Config, n: int) -> float:
        return prior(c, msgspec.structs.replace(p, programs={config_key(c): n * times}), gpu)

    return max(short, key=lambda cn: after(*cn))[0]  # max keeps the first of equals: SPACE order


def parallelism(spec: TransformSpec, p: Problem, gpu: GpuFacts = H200) -> Effect:
    """A programs-adding transformation's effect: SMs over programs where the grid is under one program
    per SM, at the start or (weighted by their share) over the SPACE's configs; capped by how many programs
    per tile its parameter allows."""
    sms = int(gpu.sm_count.value)
    cap = max((v for q in spec.params for v in q.domain if isinstance(v, int) and not isinstance(v, bool)),
              default=None)
    start = [n for _, n in _programs([p.config], p, gpu)]
    if p.points:
        configs = list(p.points)
    elif p.space and math.prod(len(v) for v in p.space.values()) <= MAX_CONFIGS:
        configs = all_configs(p.space, p.config)
    else:
        configs = [p.config]
    grid = _programs(configs, p, gpu)
    if not grid:
        return UNKNOWN

    def gain(n: int) -> float:
        return min(float(cap), sms / n) if cap else sms / n

    if start and start[0] < sms:
        return Effect(factor=gain(start[0]),
                      why=f"the start's grid is {start[0]} programs for {sms} SMs (under one per SM)")
    short = [(c, n) for c, n in grid if n < sms]
    if not short:
        return Effect(factor=1.0, why=f"every config of the SPACE launches >= {sms} programs (fewest "
                                      f"{min(n for _, n in grid)}): no idle SMs to fill")
    share = len(short) / len(grid)
    factor = 1.0 + share * (statistics.median(gain(n) for _, n in short) - 1.0)
    default = next((q.default for q in spec.params if isinstance(q.default, int) and q.default > 1), 1)
    at = _best_after(short, int(default), p, gpu)
    return Effect(factor=factor, config=at,
                  why=f"{len(short)} of {len(grid)} SPACE configs launch under {sms} programs (down to "
                      f"{min(n for _, n in short)}) for {sms} SMs; {spec.name} multiplies programs per tile by "
                      f"up to {cap}; proposed at the one the search's prior ranks first with {default}x the "
                      f"programs ({', '.join(f'{k}={v}' for k, v in at.items() if v != p.config.get(k))})")


def effect(spec: TransformSpec, p: Problem, gpu: GpuFacts = H200) -> Effect:
    """The estimate for one transformation of the table (UNKNOWN where none applies)."""
    if "small_grid" in spec.answers:
        return parallelism(spec, p, gpu)
    if spec.name == "aligned_copies":
        return load_width(spec, p.full_shape, p.dtype)
    return UNKNOWN
