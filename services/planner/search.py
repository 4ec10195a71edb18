"""Config search over a task's SPACE: a static prior from GPU.md's limits, then coordinate descent.

Kernel Tuner's shape: one entry point (`next_configs`), an options record, tested on CPU by replaying
recorded timings. tinygrad's lesson: a failed or unmeasured config is a value (None), never an exception.

1. Prune before anything compiles: the task's own constraint() (as load_task evaluated it), shared
   memory per block, threads per block, accumulator registers, blocks per SM (GPU.md's occupancy
   formula, shared/occupancy.py), and the smallest tile `tl.dot` gives a warp.
2. Rank what survives by a prior built from the diagnosis: wgmma eligibility, tile arithmetic intensity,
   pipelining depth, 128 B swizzle rows, waves and the L2 footprint of the grouped order (dot kernels);
   elements per thread and waves (the rest).
3. Round 0 measures the best-ranked configs of distinct tile shapes; each later round measures the
   untried one-knob neighbours of the best measured config, best prior first. No neighbour left = converged.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from shared.constraint_table import ConstraintScope, refusing
from shared.gpu_facts import H200, GpuFacts
from shared.messages import Scalar
from shared.occupancy import blocks_per_sm

Config = dict[str, Scalar]
LAUNCH = ("num_warps", "num_stages", "maxnreg")
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
# Registers a thread needs besides the fp32 accumulator (addresses, loop state, operand fragments): ptxas
# reports 40-60 for the 32x32 Triton matmul (tests/fixtures/ptxas), so 32 is a lower bound, not a guess up.
REG_OVERHEAD = 32
# 16 x 16 per warp is the smallest tile tl.dot gives a warp (examples/matmul.py constraint).
MIN_DOT_TILE_PER_WARP = 256


class SearchOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The strategy's options table."""

    batch: int = 4  # configs per round: the verifier's funnel runs them side by side
    seeds: int = 4  # distinct tile shapes measured in round 0
    device: str = "H200"


class Problem(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What the search knows about the task, read from its literals (never by running it)."""

    config: Config
    space: dict[str, list[Scalar]]
    full_shape: dict[str, int] = {}
    # The other shapes a config must launch on (micro, edge): pruned for shared memory on each. On the
    # H200 the suite's attention d64 winners needed 262-279 KB on its d=128 edge shape and failed there.
    other_shapes: list[dict[str, int]] = []
    dtype: str = "float32"
    dot: bool = False  # the kernel does a tl.dot (from the IR or the kernel class)
    # config_key -> programs of the config's smallest launch at the full shape, recorded by the
    # launch_grid tool from the task's own launch(); a config not in it falls back to the shape model.
    programs: dict[str, int] = {}
    findings: list[str] = []  # pattern ids from the decomposer, most important first
    # A SPACE given as a list of configs (autotune-style): the only configs allowed, searched exhaustively
    # in prior order; `space` then holds each key's listed values. [] = the cross product of `space`.
    points: list[Config] = []
    # The task's constraint() as load_task evaluated it over SPACE (shared/constraint_table.py): a config
    # a scope refuses is pruned; one no scope covers (a transformation's new knob) is not judged.
    constraints: list[ConstraintScope] = []


class TileKeys(msgspec.Struct, frozen=True):
    m: str | None
    n: str | None
    k: str | None
    group: str | None
    block: str | None  # the one block size of a 1-D kernel


def _find(keys: list[str], suffix: str) -> str | None:
    pat = re.compile(rf"^(BLOCK|BLK|TILE|B)_?(SIZE_)?{suffix}$", re.IGNORECASE)
    return next((k for k in keys if pat.match(k)), None)


def tile_keys(config: Mapping[str, Scalar]) -> TileKeys:
    keys = [k for k in config if k not in LAUNCH]
    group = next((k for k in keys if re.match(r"^GROUP(_SIZE)?_?M$", k, re.IGNORECASE)), None)
    block = next((k for k in keys if re.match(r"^(BLOCK|BLOCK_SIZE|BLOCK_N|XBLOCK)$", k)), None)
    m, n, k = _find(keys, "M"), _find(keys, "N"), _find(keys, "K")
    if block is None and not (m or n or k):
        # The one BLOCK_<X> of a kernel without M/N/K tiles is its block (l1_cross_entropy's BLOCK_V, the
        # chunk its loop streams); two (a CUDA task's BLOCK_X, BLOCK_Y) name no single block.
        named = [key for key in keys if re.match(r"^BLOCK_[A-Z]+$", key)]
        block = named[0] if len(named) == 1 else None
    return TileKeys(m, n, k, group, block)


class Estimate(msgspec.Struct, kw_only=True):
    smem_bytes: int
    regs: int
    threads: int
    blocks_per_sm: int
    programs: int | None
    waves: float | None


def _dims(p: Problem) -> tuple[int | None, int | None, int | None]:
    s = p.full_shape
    if "s" in s and "d" in s:  # attention: M = N = sequence, K = head dim, programs over batch x heads
        return s["s"], s["s"], s["d"]
    return s.get("m", s.get("rows")), s.get("n", s.get("cols")), s.get("k")


def estimate(cfg: Config, p: Problem, gpu: GpuFacts = H200) -> Estimate:
    t = tile_keys(cfg)
    w = int(cfg.get("num_warps", 4))
    stages = max(int(cfg.get("num_stages", 1)), 1)
    elem = DTYPE_BYTES.get(p.dtype, 4)
    m, n, k = _dims(p)
    programs: int | None = None
    if p.dot and t.m and t.n:
        bm, bn = int(cfg[t.m]), int(cfg[t.n])
        bk = int(cfg[t.k]) if t.k else (k or 64)
        # One A and one B tile per pipeline stage (examples/matmul.py constraint); attention also holds V.
        smem = (bm * bk + bk * bn * (2 if not t.k else 1)) * elem * stages
        regs = bm * bn // (32 * w) + REG_OVERHEAD
        if m and n:
            programs = math.ceil(m / bm) * math.ceil(n / bn) if t.k else math.ceil(m / bm)
            if not t.k:  # attention: one program per (query block, batch, head)
                programs *= p.full_shape.get("b", 1) * p.full_shape.get("h", 1)
    else:
        blk = _elementwise_tile(cfg, t)
        smem = 0
        regs = min(255, blk // (32 * w) + REG_OVERHEAD)
        total = math.prod(p.full_shape.values()) if p.full_shape else None
        rows = p.full_shape.get("rows")
        programs = rows if rows else (math.ceil(total / blk) if total else None)
    programs = p.programs.get(config_key(cfg), programs)  # the launch's own grid beats the model
    bps = blocks_per_sm(w, min(regs, 255), smem, gpu)  # regs >= REG_OVERHEAD, so >= 1 as the formula needs
    waves = programs / (bps * int(gpu.sm_count.value)) if programs and bps else None
    return Estimate(
        smem_bytes=smem, regs=regs, threads=32 * w, blocks_per_sm=bps, programs=programs, waves=waves
    )


def _elementwise_tile(cfg: Config, t: TileKeys) -> int:
    """Elements one program of a kernel without tl.dot holds at a time: BLOCK_M x BLOCK_N for a 2-D tile
    (l1_col_reduce), else its one block size."""
    if t.m and t.n and t.m != t.n:
        return int(cfg[t.m]) * int(cfg[t.n])
    return int(cfg[t.block]) if t.block else 1


def prune_reasons(cfg: Config, p: Problem, gpu: GpuFacts = H200) -> list[str]:
    """Why a config cannot be good or cannot launch; empty = worth measuring."""
    e = estimate(cfg, p, gpu)
    t = tile_keys(cfg)
    w = int(cfg.get("num_warps", 4))
    out = []
    if p.constraints and refusing(p.constraints, cfg) is not None:
        out.append("the task's constraint refuses it")
    if p.points and config_key(cfg) not in {config_key(c) for c in p.points}:
        out.append("not one of SPACE's listed configs")
    if e.threads > int(gpu.max_threads_per_block.value):
        out.append(f"{e.threads} threads > {int(gpu.max_threads_per_block.value)} per block")
    limit = int(gpu.shared_per_block_optin.value)
    if e.smem_bytes > limit:
        out.append(f"shared memory {e.smem_bytes} B > {limit} B per block")
    elif p.dot:
        for shape in p.other_shapes:
            at = msgspec.structs.replace(p, full_shape=shape, other_shapes=[])
            smem = estimate(cfg, at, gpu).smem_bytes
            if smem > limit:
                out.append(f"shared memory {smem} B > {limit} B per block on shape {shape}")
                break
    if e.regs > gpu.max_registers_per_thread.value:
        out.append(f"~{e.regs} registers/thread > {int(gpu.max_registers_per_thread.value)}: spills")
    if e.blocks_per_sm < 1:
        out.append("no block fits on an SM")
    if p.dot and t.m and t.n and int(cfg[t.m]) * int(cfg[t.n]) < MIN_DOT_TILE_PER_WARP * w:
        out.append(f"tile {cfg[t.m]}x{cfg[t.n]} is smaller than 16x16 per warp for {w} warps")
    if not p.dot and t.block and _elementwise_tile(cfg, t) < 32 * w:
        out.append(f"{_elementwise_tile(cfg, t)} elements for {32 * w} threads: idle threads")
    return out


def prior(cfg: Config, p: Problem, gpu: GpuFacts = H200) -> float:
    """Higher = measure first. Each term names the GPU.md fact it encodes."""
    e = estimate(cfg, p, gpu)
    t = tile_keys(cfg)
    w = int(cfg.get("num_warps", 4))
    stages = max(int(cfg.get("num_stages", 1)), 1)
    score = 0.0
    if e.waves is not None:
        # Under one wave leaves SMs idle (ncu rule: waves per SM < 1); a ragged last wave idles the tail.
        score -= max(0.0, 1.0 - e.waves) * 2.0
        score += 0.3 * (e.waves / math.ceil(e.waves)) if e.waves > 0 else 0.0
    if p.dot and t.m and t.n:
        bm, bn = int(cfg[t.m]), int(cfg[t.n])
        bk = int(cfg[t.k]) if t.k else (_dims(p)[2] or 64)
        elem = DTYPE_BYTES.get(p.dtype, 4)
        # wgmma needs num_warps % 4 == 0, M % 64 == 0, N % 8 == 0, K >= 16 (GPU.md); mma.sync runs at a
        # fraction of its rate, so eligibility dominates the ranking.
        if w % 4 == 0 and bm % 64 == 0 and bn % 8 == 0 and bk >= 16:
            score += 2.0
        # FLOP per byte loaded by one tile = BM*BN/(BM+BN) (x2 FLOP per MAC, / 2 B per bf16 element);
        # the H200 ridge is 784e12 / 4.35e12 = 180 FLOP/B (GPU.md), so more is better all the way there.
        intensity = bm * bn / (bm + bn)
        score += 1.5 * math.log2(max(intensity, 1.0)) / math.log2(180.0)
        # Loads in flight = stages - 1: two or more hide HBM latency behind the tensor cores.
        score += 0.5 * min(stages - 1, 3) / 3
        # 128 B rows let the shared layout use the full 128 B swizzle (32 banks x 4 B): no conflicts.
        if bk * elem >= 128:
            score += 0.3
        # Accumulator above ~128 registers/thread leaves ptxas little room before spilling.
        if e.regs > 128 + REG_OVERHEAD:
            score -= 0.5
        if t.group and e.waves is not None:
            score -= 0.4 * _l2_overflow(cfg, p, e, gpu)
    else:
        blk = _elementwise_tile(cfg, t) if t.block else 0
        per_thread = blk / (32 * w) if blk else 0
        # 4-16 elements per thread: 16 B vector loads with a few in flight per thread (GPU.md: ideal
        # 4 sectors per request); more costs registers, fewer leaves bandwidth on the table.
        if per_thread:
            score += 1.0 - abs(math.log2(per_thread / 8)) / 4
    return score


def _l2_overflow(cfg: Config, p: Problem, e: Estimate, gpu: GpuFacts) -> float:
    """How far one wave's A rows + B columns exceed L2 under the grouped order (0 = they fit)."""
    t = tile_keys(cfg)
    m, n, k = _dims(p)
    if not (m and n and k and t.k and t.group):
        return 0.0
    g = int(cfg[t.group])
    elem = DTYPE_BYTES.get(p.dtype, 4)
    per_wave = e.blocks_per_sm * int(gpu.sm_count.value)
    a_rows = min(g, per_wave) * int(cfg[t.m]) * k * elem
    b_cols = min(math.ceil(per_wave / g), math.ceil(n / int(cfg[t.n]))) * int(cfg[t.n]) * k * elem
    return max(0.0, (a_rows + b_cols) / gpu.l2_bytes.value - 1.0)


def int_dims(shape: Mapping[str, object]) -> dict[str, int]:
    """A shape's integer dimensions (a shape may also carry e.g. a dtype string)."""
    return {k: v for k, v in shape.items() if isinstance(v, int) and not isinstance(v, bool)}


def config_key(cfg: Mapping[str, Scalar]) -> str:
    return ",".join(f"{k}={cfg[k]}" for k in sorted(cfg))


def programs_from(configs: Sequence[Config], results: Sequence[Any], primary: str = "") -> dict[str, int]:
    """Problem.programs from a launch_grid answer: config_key -> the programs of the config's smallest
    launch (the one most likely to leave SMs idle), for each requested config whose launch was recorded.
    With `primary` (the task's first kernel) only that kernel's launches count when it was launched: a
    small helper launch after it (the adder of partial rows l1_col_reduce had with its SPLIT_M switch,
    32 programs for every config) would otherwise stand for every config. `results` are the answer's ConfigGrids, one per
    config in request order (a mismatch raises)."""
    out: dict[str, int] = {}
    for c, r in zip(configs, results, strict=True):
        own = [n for k, n in zip(r.kernels, r.programs, strict=False) if k == primary]
        if own or r.programs:
            out[config_key(c)] = min(own or r.programs)
    return out


def all_configs(space: dict[str, list[Scalar]], base: Config) -> list[Config]:
    out: list[Config] = [dict(base)]
    for key, values in space.items():
        out = [c | {key: v} for c in out for v in values]
    return out


def _neighbours(cfg: Config, space: dict[str, list[Scalar]], dot: bool) -> list[Config]:
    """One-knob steps, plus for dot kernels the compound step that scales an M or N tile and num_warps
    together: it keeps accumulator registers per thread (BM*BN / 32W) constant, so the bigger tile is not
    pruned for registers as the one-knob step to it would be."""
    out = []
    for key, values in space.items():
        if key not in cfg or cfg[key] not in values:
            continue
        i = values.index(cfg[key])
        out += [cfg | {key: values[j]} for j in (i - 1, i + 1) if 0 <= j < len(values)]
    t = tile_keys(cfg)
    warps = space.get("num_warps", [])
    if dot and "num_warps" in cfg and cfg["num_warps"] in warps:
        for key in (t.m, t.n):
            if key is None or key not in space or cfg[key] not in space[key]:
                continue
            for f in (2, 0.5):
                v, w = int(int(cfg[key]) * f), int(int(cfg["num_warps"]) * f)
                if v in space[key] and w in warps:
                    out.append(cfg | {key: v, "num_warps": w})
    return out


def _pattern_moves(
    best: Config, space: dict[str, list[Scalar]], measured: dict[str, float], legal: Callable[[Config], bool]
) -> list[Config]:
    """Two-knob steps from `best` (Hooke-Jeeves' pattern move over the SPACE's value lists), each made of
    two one-knob steps that were both measured, best-ranked first: ranked by the worse of the two
    one-knob scores (higher is better), so a move combines two directions that each held up. Tried
    configs stay in the list, so the caller can tell that the top of it has been measured already."""
    steps: list[tuple[str, Scalar, float]] = []  # (knob, value, score of best with that one change)
    for key, values in space.items():
        if key not in best or best[key] not in values:
            continue
        i = values.index(best[key])
        for j in (i - 1, i + 1):
            if 0 <= j < len(values) and (v := measured.get(config_key(best | {key: values[j]}))) is not None:
                steps.append((key, values[j], v))
    moves = [
        (best | {k1: v1, k2: v2}, min(s1, s2))
        for n, (k1, v1, s1) in enumerate(steps)
        for k2, v2, s2 in steps[n + 1 :]
        if k1 != k2
    ]
    moves = [(c, s) for c, s in moves if legal(c)]
    return _dedup([c for c, _ in sorted(moves, key=lambda cs: -cs[1])])


def next_configs(
    p: Problem, history: list[tuple[Config, float | None]], opts: SearchOptions | None = None
) -> list[Config]:
    """The next round: configs not yet in `history` ((config, score) pairs, None = failed/unmeasured).

    Empty = nothing left worth measuring around the best config (converged).
    """
    o = opts or SearchOptions()
    tried = {config_key(c) for c, _ in history}
    scored = [(c, v) for c, v in history if v is not None]

    def ok(c: Config) -> bool:
        return config_key(c) not in tried and not prune_reasons(c, p)

    # Round 0 (and whenever a seed is still untried): the diagnosis-ranked seeds, one per tile shape.
    pending = [c for c in seeds(p, o.seeds) if config_key(c) not in tried]
    if pending or not scored:
        return pending[: max(o.batch, o.seeds)]
    if p.points:  # a listed SPACE is small (autotune lists are): measure all of it, best prior first
        return sorted((c for c in _dedup(p.points) if ok(c)), key=lambda c: -prior(c, p))[: o.batch]
    best = max(scored, key=lambda cv: cv[1])[0]  # type: ignore[arg-type, return-value]
    around = sorted((c for c in _neighbours(best, p.space, p.dot) if ok(c)), key=lambda c: -prior(c, p))
    if around:
        return _dedup(around)[: o.batch]
    # No one-knob step is left: a local optimum of the one-knob moves. One round of pattern moves: the
    # `batch` best-ranked two-knob steps (each a pair of measured one-knob directions taken together),
    # then stop. The replay of the H200 transpose table stopped at 95.6 % of its optimum, which lay one
    # X-up / Y-down diagonal away (benchmarks/search_replay.py).
    measured = {config_key(c): v for c, v in scored}
    moves = _pattern_moves(best, p.space, measured, lambda c: not prune_reasons(c, p))
    return [c for c in moves[: o.batch] if config_key(c) not in tried]


def after_failures(
    p: Problem, history: list[tuple[Config, float | None]], opts: SearchOptions | None = None
) -> list[Config]:
    """Every seed was tried and none measured because they failed (a tile too large for shared memory, a
    static hazard): the next-ranked seeds of tile shapes not tried yet, so one round of failures does not
    end the search. H200 run r38 ended an attention job after its 5 first candidates failed static, with 90
    of its 150 s left. Empty when the space has no untried legal shape."""
    o = opts or SearchOptions()
    tried = {config_key(c) for c, _ in history}
    more = [c for c in seeds(p, o.seeds + len(tried)) if config_key(c) not in tried]
    return more[: max(o.batch, o.seeds)]


MAX_SWITCH_VALUES = 4  # a knob with this few values that the tile model does not name is a switch
# A size knob by its name (BLOCK_X, ATT_BLOCK_M, FFN_BLOCK_K, TILE_N), never a switch however few values.
_SIZE_NAME = re.compile(r"(^|_)(BLOCK|BLK)(_|$)|^TILE_")


def switches(p: Problem) -> list[str]:
    """Knobs that pick a variant of the algorithm rather than a size (CHUNK_MAX 0/1 and SPLIT_M as the L1
    tasks had them, l1_transpose_cuda's USE_TILE, l3_pipeline's X_LAYOUT before issue 20, a
    transformation's SPLIT_K): not a launch option, not a tile key, not named as a size, few values. The
    prior cannot rank their values (it models sizes), so seeds() makes sure each value is measured once."""
    t = tile_keys(p.config)
    named = {k for k in (t.m, t.n, t.k, t.group, t.block) if k}
    return [
        k
        for k, v in p.space.items()
        if k not in LAUNCH and k not in named and not _SIZE_NAME.search(k) and 1 < len(v) <= MAX_SWITCH_VALUES
    ]


def seeds(p: Problem, count: int) -> list[Config]:
    """The `count` best-ranked legal configs of distinct tile shapes (deterministic), then for each value
    of a switch knob that none of them holds, the best-ranked legal config that holds it (measured in the
    next round: next_configs returns untried seeds first)."""
    every = p.points or all_configs(p.space, p.config)
    ranked = sorted((c for c in every if not prune_reasons(c, p)), key=lambda c: -prior(c, p))  # one pass over the space (the pipeline's is 138k configs), shared by both parts
    base = _shape_seeds(p, count, ranked)
    extra: list[Config] = []
    for key in switches(p):
        for value in p.space[key]:
            if any(c.get(key) == value for c in base + extra):
                continue
            if with_it := next((c for c in ranked if c.get(key) == value), None):  # best-ranked first
                extra.append(with_it)
    return base + extra


def _shape_seeds(p: Problem, count: int, ranked: list[Config]) -> list[Config]:
    """The `count` best-ranked legal configs of distinct tile shapes (deterministic); `ranked` is every
    legal config, best prior first."""
    t = tile_keys(p.config)
    shape_keys = [k for k in (t.m, t.n, t.k, t.block) if k]
    if not shape_keys:
        # Knobs the tile-shape model does not name (a CUDA task's BLOCK_X/BLOCK_Y): start from
        # the one-knob steps around the start config. Before this, every config had the same empty "tile
        # shape" and round 0 held one config (the H200 suite run timed transpose_cuda's 8x1 block alone).
        steps = (c for c in _neighbours(dict(p.config), p.space, p.dot) if not prune_reasons(c, p))
        return _dedup(sorted(steps, key=lambda c: -prior(c, p)))[:count]
    picked: list[Config] = []
    shapes: set[tuple[Scalar, ...]] = set()
    for c in ranked:
        s = tuple(c[k] for k in shape_keys)
        if s not in shapes:
            shapes.add(s)
            picked.append(c)
        if len(picked) == count:
            break
    if len(picked) < count:
        # Fewer tile shapes than seeds (a row kernel whose block must span the row: H200 r53's captured
        # rms_norm had one BLOCK_SIZE, so round 0 held one config and its job ended after it): the rest of
        # round 0 goes to the best-ranked one-knob steps around the start (launch options at that shape).
        steps = (c for c in _neighbours(dict(p.config), p.space, p.dot) if not prune_reasons(c, p))
        picked = _dedup(picked + sorted(steps, key=lambda c: -prior(c, p)))[:count]
    return picked


def _dedup(cs: list[Config]) -> list[Config]:
    seen: set[str] = set()
    out = []
    for c in cs:
        if config_key(c) not in seen:
            seen.add(config_key(c))
            out.append(c)
    return out
