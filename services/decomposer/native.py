"""Decompose a kernel that has no TTGIR (CUDA C++): PTX lanes + SASS instructions + ptxas -v. Pure.

`decompose()` sends here any artifacts whose `ttgir` is empty but which carry PTX. The pattern table is
the same (ids, severities, fixes); patterns whose predicates read TTGIR simply do not apply, and those
below read the evidence a CUDA compile leaves:
  PTX (ptx_lanes.py): byte step per lane of every ld/st/atom/red (coalescing, transposes, atomics on one
    address, shared-memory bank conflicts), forward branches on lane-varying predicates that jump over
    bar.sync, f64 instructions, `.maxntid` (the block size for the occupancy model), `.loc` lines;
  SASS (nvdisasm --print-line-info): LDG/STG widths, DFMA/DADD/DMUL, LDL/STL, ATOM/RED, BAR per line;
  ptxas -v: registers, spill bytes, stack frame (a dynamically indexed local array), static smem.
Task facts (grid, FLOP/byte formulas) and ncu counters feed the same fact and dynamic predicates as the
TTGIR path (patterns.py), through the attribute names they read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from services.decomposer import cost, divergence, roofline, summary
from services.decomposer import evidence as evm
from services.decomposer import patterns as pt
from services.decomposer.patterns import PATTERNS, Match
from services.decomposer.ptx_lanes import MemAccess, PtxKernel, parse_ptx
from services.decomposer.sass import Sass, parse_ptxas, parse_sass, per_line
from shared.tokens import TOKEN_RULE
from shared.tools.decompose import Artifacts, Decomposition, Finding, PtxasInfo, SassLine, TaskFacts

_FP64_SASS = ("DADD", "DFMA", "DMUL", "DSETP", "DMNMX", "DRCP")
_ATOM_SASS = ("ATOM", "ATOMG", "RED", "REDG", "ATOMS")
HOT_FP64_OPS = 16  # f64 instructions in one kernel beyond which it is a hot path even unrolled (64 here)


@dataclass
class NativeEvidence:
    """What the CUDA predicates read; also the attributes the fact/ncu predicates of patterns.py read."""

    ptx: PtxKernel
    sass: Sass | None
    sass_lines: list[SassLine]
    ptxas: PtxasInfo | None
    facts: TaskFacts
    threads: int | None  # from .maxntid (an upper bound the launch respects)
    programs: int | None
    blocks_per_sm: int | None
    occupancy_limiter: str
    theoretical_occupancy: float | None
    waves: float | None
    shared_bytes: int | None
    dyn: dict[str, float] = field(default_factory=dict)

    def ncu(self, *names: str) -> float | None:
        for n in names:
            if n in self.dyn:
                return self.dyn[n]
        return None

    def sass_count(self, prefixes: tuple[str, ...]) -> int:
        if self.sass is None:
            return 0
        return sum(1 for i in self.sass.instrs if i.opcode.split(".")[0] in prefixes)

    def locs(self, accs: list[MemAccess]) -> list[str]:
        out: list[str] = []
        for a in accs:
            loc = f"{a.instr.file}:{a.line}" if a.instr.file else ""
            if loc and loc not in out:
                out.append(loc)
            row = next((r for r in self.sass_lines if r.line == a.line and r.file == a.instr.file), None)
            if row is not None and f"sass:{row.first_addr}" not in out:
                out.append(f"sass:{row.first_addr}")
        return out


def _uniq(accs: list[MemAccess]) -> list[MemAccess]:
    """One access per (line, kind, space, step): unrolled copies count once."""
    seen: dict[tuple, MemAccess] = {}
    for a in accs:
        seen.setdefault((a.line, a.kind, a.space, a.coef), a)
    return list(seen.values())


def _step(a: MemAccess) -> str:
    return "a run-time stride (a parameter)" if a.coef == "S" else f"{a.coef} B"


def _global(ev: NativeEvidence) -> list[MemAccess]:
    return [a for a in ev.ptx.accesses if a.space == "global"]


def _transposed(ev: NativeEvidence) -> list[MemAccess]:
    """A strided access whose data also moves through a contiguous 2-D one, with no shared tile between."""
    g = _global(ev)
    if any(a.space == "shared" for a in ev.ptx.accesses):
        return []
    if not any(a.cls == "contiguous" and a.two_d for a in g):
        return []
    return _uniq([a for a in g if a.coef == "S" and a.kind != "atomic"])


def transposed_access_no_staging(ev: NativeEvidence) -> Match | None:
    hits = _transposed(ev)
    if not hits:
        return None
    return Match(
        0.95,
        ev.locs(hits),
        [
            f"{a.instr.opcode}: lanes step {_step(a)} apart while the other side of the copy is contiguous "
            "row-major: a transpose straight through global memory, no shared-memory tile"
            for a in hits
        ],
    )


def uncoalesced_strided_access(ev: NativeEvidence) -> Match | None:
    skip = {id(a) for a in _transposed(ev)}
    hits = _uniq(
        [
            a
            for a in _global(ev)
            if a.cls in ("strided", "irregular") and a.kind != "atomic" and id(a) not in skip
        ]
    )
    if not hits:
        return None
    return Match(
        0.9,
        ev.locs(hits),
        [
            f"{a.instr.opcode}: adjacent lanes step {_step(a)} apart ({a.width} B each): one sector per lane"
            for a in hits
        ],
    )


def gather_indirect_access(ev: NativeEvidence) -> Match | None:
    hits = _uniq([a for a in _global(ev) if a.cls == "indirect"])
    if not hits:
        return None
    return Match(0.2, ev.locs(hits), [f"{a.instr.opcode} address comes from loaded data" for a in hits])


def atomic_contention(ev: NativeEvidence) -> Match | None:
    hits = _uniq([a for a in _global(ev) if a.kind == "atomic" and a.cls == "uniform"])
    if not hits or (ev.programs is not None and ev.programs <= 1):
        return None
    n = ev.sass_count(_ATOM_SASS)
    return Match(
        0.8,
        ev.locs(hits),
        [
            f"{a.instr.opcode} on one address from every lane"
            + (f" of {ev.programs} blocks" if ev.programs else "")
            + (f"; SASS {n} ATOM/RED" if n else "")
            for a in hits
        ],
    )


def atomics_in_loop(ev: NativeEvidence) -> Match | None:
    hits = _uniq(
        [
            a
            for a in _global(ev)
            if a.kind == "atomic" and a.in_loop and a.cls != "uniform" and ".cas" not in a.instr.opcode
        ]
    )  # a CAS in a loop is a retry loop: atomic_cas_retry_loop
    if not hits:
        return None
    return Match(0.4, ev.locs(hits), [f"{a.instr.opcode} issued every loop iteration" for a in hits])


def shared_bank_conflicts(ev: NativeEvidence) -> Match | None:
    hits = _uniq([a for a in ev.ptx.accesses if a.space == "shared" and a.bank_ways() >= 2])
    if not hits:
        return None
    worst = max(a.bank_ways() for a in hits)
    return Match(
        round(min(0.9, 0.3 + worst / 64), 3),
        ev.locs(hits),
        [
            f"{a.instr.opcode}: lanes step {a.coef} B = {abs(int(a.coef)) // 4} words apart: "
            f"{a.bank_ways()}-way bank conflict (pad the row by one word)"
            for a in hits
        ],
    )


def local_memory_array(ev: NativeEvidence) -> Match | None:
    p = ev.ptxas
    local = _uniq([a for a in ev.ptx.accesses if a.space == "local"])
    # sinf/cosf's slow-path array (trig_slow_range_reduction) and printf's argument buffer
    # (debug_print_or_assert) are local arrays another pattern names
    named = {(i.file, i.line) for i in ev.ptx.f64_ops if i.idx in pt.control.trig_f64_ops(ev.ptx)}
    named |= {(i.file, i.line) for i, c in ev.ptx.calls() if c == "vprintf"}
    if named and all((a.instr.file, a.line) in named for a in local):
        return None
    if p is None or p.spill_stores + p.spill_loads > 0 or p.stack_frame == 0 or not local:
        return None
    n = ev.sass_count(("LDL", "STL"))
    return Match(
        0.5,
        ev.locs(local),
        [
            f"ptxas: {p.stack_frame} B stack frame with 0 B spills: a per-thread array lives in local memory"
            + (f"; SASS {n} LDL/STL" if n else "")
            + "; index it with compile-time constants (unrolled) or keep the table in shared memory"
        ],
    )


def divergent_branch_around_barrier(ev: NativeEvidence) -> Match | None:
    hits = ev.ptx.divergent_barriers
    if not hits:
        return None
    lines = sorted({(b.file, b.line) for _, bars in hits for b in bars})
    return Match(
        0.45 if len(hits) > 1 else 0.3,
        [f"{f}:{ln}" for f, ln in lines if f][:6],
        [
            (
                f"{len(hits)} branch(es) on a lane-varying predicate jump over bar.sync (lines "
                f"{', '.join(str(ln) for _, ln in lines)}): __syncthreads under a thread-dependent branch"
            )
        ],
    )


def barrier_in_loop(ev: NativeEvidence) -> Match | None:
    """bar.sync inside a loop that touches no shared memory: nothing for the barrier to order."""
    guarded = {id(b) for _, bars in ev.ptx.divergent_barriers for b in bars}
    hits = []
    for lo, hi in ev.ptx.loops:
        body = ev.ptx.instrs[lo : hi + 1]
        if any(".shared" in i.opcode for i in body):
            continue
        hits += [i for i in body if i.opcode.startswith(("bar.sync", "barrier")) and id(i) not in guarded]
    if not hits:
        return None
    lines = sorted({(i.file, i.line) for i in hits if i.file})
    return Match(
        0.35,
        [f"{f}:{ln}" for f, ln in lines][:4],
        [
            (
                f"{len(hits)} bar.sync in a loop with no shared-memory access: every warp waits for the slowest "
                "each iteration, for nothing"
            )
        ],
    )


def read_only_load_not_nc(ev: NativeEvidence) -> Match | None:
    """Global loads of a kernel that never loads through the read-only (.nc) path: inputs lack
    `const __restrict__`. Small on Hopper (L1 caches global loads anyway): a smell, low."""
    loads = [a for a in ev.ptx.accesses if a.space == "global" and a.kind == "load"]
    if not loads or any(".nc" in a.instr.opcode for a in loads):
        return None
    return Match(
        0.04,
        ev.locs(loads),
        [
            (
                f"{len(loads)} ld.global without .nc: no input is `const __restrict__`, so the compiler cannot use "
                "the read-only data path (a small gain on sm_90, where L1 caches global loads too)"
            )
        ],
        "low",
    )


def _loop_instrs(ev: NativeEvidence, prefixes: tuple[str, ...]) -> list:
    return [i for i in ev.ptx.instrs if i.opcode.startswith(prefixes) and ev.ptx.in_loop(i.idx)]


def integer_division_in_hot_loop(ev: NativeEvidence) -> Match | None:
    """PTX div/rem on integers by a register (not an immediate: the compiler strength-reduces those);
    64-bit ones are int64_division's."""
    hits = [
        i
        for i in _loop_instrs(ev, ("div.s", "div.u", "rem.s", "rem.u"))
        if len(i.operands) >= 3 and i.operands[2].startswith("%") and not i.opcode.endswith(("64",))
    ]
    if not hits:
        return None
    lines = sorted({(i.file, i.line) for i in hits if i.file})
    return Match(
        0.35,
        [f"{f}:{ln}" for f, ln in lines][:4],
        [f"{len(hits)} integer div/rem by a run-time value inside a loop (~20+ instructions each)"],
    )


def slow_precise_math(ev: NativeEvidence) -> Match | None:
    """IEEE-rounded f32 division/sqrt (div.rn.f32, sqrt.rn.f32) inside a loop: no fast-math intrinsic."""
    hits = _loop_instrs(ev, ("div.rn.f32", "sqrt.rn.f32"))
    if not hits:
        return None
    lines = sorted({(i.file, i.line) for i in hits if i.file})
    return Match(
        0.15,
        [f"{f}:{ln}" for f, ln in lines][:4],
        [
            f"{len(hits)} IEEE-precise f32 div/sqrt inside a loop (__fdividef / rsqrtf or a reciprocal would do)"
        ],
        "low",
    )


def fp64_arithmetic(ev: NativeEvidence) -> Match | None:
    """f64 PTX instructions, less those another pattern names as the cause: float math promoted by double
    literals (float_promoted_to_double) and sinf's Payne-Hanek reduction (trig_slow_range_reduction)."""
    promoted = {i.idx for i in pt.control._promoted(ev.ptx)}
    trig = pt.control.trig_f64_ops(ev.ptx)
    ops = [o for o in ev.ptx.f64_ops if o.idx not in promoted and o.idx not in trig]
    if promoted:  # the widening/narrowing cvts around a promoted op go with it
        ops = [o for o in ops if not o.opcode.startswith("cvt")]
    if not ops:
        return None
    n_sass = ev.sass_count(_FP64_SASS)
    hot = any(ev.ptx.in_loop(o.idx) for o in ops) or len(ops) >= HOT_FP64_OPS
    lines = sorted({(o.file, o.line) for o in ops if o.file})
    return Match(
        0.7 if hot else 0.5,
        [f"{f}:{ln}" for f, ln in lines][:4],
        [
            f"{len(ops)} f64 PTX instructions ({', '.join(sorted({o.opcode for o in ops})[:5])})"
            + (f", SASS {n_sass} DADD/DFMA/DMUL" if n_sass else "")
            + ": FP64 runs at half the FP32 rate on H200"
        ],
        "high" if hot else "medium",
    )


def _occ(ev: NativeEvidence, limiter: str) -> Match | None:
    occ = ev.theoretical_occupancy
    if occ is None or ev.occupancy_limiter != limiter or occ > 0.5:
        return None
    return Match(
        round(0.6 * (1 - occ), 3),
        [],
        [
            (
                f"theoretical occupancy {100 * occ:.0f} % ({ev.blocks_per_sm} blocks x {ev.threads} "
                f"threads), limited by {limiter}"
            )
        ],
    )


STATIC: dict[str, Callable[[NativeEvidence], Match | None]] = {
    "transposed_access_no_staging": transposed_access_no_staging,
    "uncoalesced_strided_access": uncoalesced_strided_access,
    "gather_indirect_access": gather_indirect_access,
    "atomic_contention": atomic_contention,
    "atomics_in_loop": atomics_in_loop,
    "shared_bank_conflicts": shared_bank_conflicts,
    "local_memory_array": local_memory_array,
    "divergent_branch_around_barrier": divergent_branch_around_barrier,
    "warp_divergence": lambda ev: divergence.warp_divergence(ev.ptx),
    "barrier_in_loop": barrier_in_loop,
    "integer_division_in_hot_loop": integer_division_in_hot_loop,
    "slow_precise_math": slow_precise_math,
    "read_only_load_not_nc": read_only_load_not_nc,
    "fp64_arithmetic": fp64_arithmetic,
    "debug_print_or_assert": pt.control.debug_print_or_assert_ptx,
    # issue 22, library 60 -> 80: predicates over `ev.ptx` / `ev.threads` / `ev.facts` shared with Triton
    **{
        p.id: p.static  # type: ignore[misc]
        for p in PATTERNS
        if p.id
        in (
            "volatile_access_in_loop",
            "memory_fence_in_loop",
            "device_heap_allocation",
            "global_atomics_not_privatised",
            "atomic_cas_retry_loop",
            "shared_memory_tree_reduction",
            "barrier_after_last_shared_use",
            "matmul_on_cuda_cores",
            "block_not_multiple_of_warp",
            "float_promoted_to_double",
            "noinline_call_in_loop",
            "trig_slow_range_reduction",
            "int64_division",
            "timing_instrumentation_left_in",
        )
    },
    "occupancy_limited_by_registers": lambda ev: _occ(ev, "registers"),
    "occupancy_limited_by_shared_memory": lambda ev: _occ(ev, "shared memory"),
    "occupancy_limited_by_block_size": lambda ev: _occ(ev, "blocks"),
    # fact- and ptxas/SASS-line-driven predicates of the TTGIR path read only what NativeEvidence has
    "register_spills": pt.register_spills,  # type: ignore[dict-item]
    "small_grid": pt.small_grid,  # type: ignore[dict-item]
    "tail_effect": pt.tail_effect,  # type: ignore[dict-item]
    "launch_bound_tiny_kernel": pt.launch_bound_tiny_kernel,  # type: ignore[dict-item]
    "roofline_far_below": pt.roofline_far_below,  # type: ignore[dict-item]
}


def match(ev: NativeEvidence) -> list[Finding]:
    """PATTERNS in order: the CUDA static predicate where one applies; every dynamic (ncu) predicate,
    which reads only counters."""
    found = []
    for p in PATTERNS:
        st = STATIC.get(p.id)
        dyn = p.dynamic(ev) if p.dynamic and ev.dyn else None  # type: ignore[arg-type]
        if fc := pt.finding(p, st(ev) if st else None, dyn):
            found.append(fc)
    cost.apply(found, ev.facts, [], pt.ranking.outside(PATTERNS))
    return pt.rank(found)


def build(artifacts: Artifacts, facts: TaskFacts) -> tuple[NativeEvidence, list[str]]:
    ptx = parse_ptx(artifacts.ptx, artifacts.kernel)
    warnings: list[str] = ["no TTGIR: decomposed from PTX/SASS/ptxas (CUDA C++ path); TTGIR patterns skipped"]
    sass = parse_sass(artifacts.sass, ptx.name) if artifacts.sass.strip() else None
    if sass is None:
        warnings.append("no SASS given: instruction counts per line skipped")
    lines = per_line(sass) if sass is not None and sass.has_line_info else []
    ptxas = parse_ptxas(artifacts.ptxas_info, ptx.name) if artifacts.ptxas_info.strip() else None
    if ptxas is None:
        warnings.append("no ptxas -v info: registers and spills unknown")
    threads = math.prod(ptx.maxntid) if ptx.maxntid else (math.prod(facts.block) if facts.block else None)
    if threads is None:
        warnings.append(
            "no .maxntid in the PTX (no __launch_bounds__) and no launch block given: occupancy not modelled"
        )
    smem = (
        artifacts.shared_bytes
        if artifacts.shared_bytes is not None
        else (ptxas.smem_bytes if ptxas else None)
    )
    bps, lim, theo, waves = None, "", None, None
    programs = math.prod(facts.grid) if facts.grid else None
    if threads:
        warps = max(1, -(-threads // 32))
        bps, lim = evm.occupancy(warps, ptxas.registers if ptxas else None, smem, facts)
        theo = bps * warps / facts.device.max_warps_per_sm if bps else None
        waves = programs / (facts.device.sms * bps) if programs and bps else None
    dyn: dict[str, float] = {}
    if facts.dynamic is not None:
        dyn.update(facts.dynamic.nvml)
        dyn.update(facts.dynamic.ncu)
    ev = NativeEvidence(
        ptx=ptx,
        sass=sass,
        sass_lines=lines,
        ptxas=ptxas,
        facts=facts,
        threads=threads,
        programs=programs,
        blocks_per_sm=bps,
        occupancy_limiter=lim,
        theoretical_occupancy=theo,
        waves=waves,
        shared_bytes=smem,
        dyn=dyn,
    )
    return ev, warnings


def decompose_native(artifacts: Artifacts, facts: TaskFacts | None = None) -> Decomposition:
    """Raises ValueError when the PTX has no .entry (nothing to decompose)."""
    f = facts or TaskFacts()
    ev, warnings = build(artifacts, f)
    findings = match(ev)
    roof = roofline.classify(f.flops, f.bytes_moved, f.measured_s, f.dtype, False, f.device)
    header = []
    if ev.ptxas is not None:
        p = ev.ptxas
        header.append(
            f"ptxas: {p.registers} regs, spills {p.spill_stores}/{p.spill_loads} B, stack {p.stack_frame} B, "
            f"smem {p.smem_bytes} B"
        )
    if ev.theoretical_occupancy is not None:
        header.append(
            f"occupancy: {ev.blocks_per_sm} blocks/SM of {ev.threads} threads "
            f"({100 * ev.theoretical_occupancy:.0f} %), limit {ev.occupancy_limiter}"
            + (f", grid {ev.programs} = {ev.waves:.2f} waves" if ev.waves is not None else "")
        )
    g = [a for a in ev.ptx.accesses if a.space in ("global", "shared", "local")]
    for a in _uniq(g)[:12]:
        header.append(f"{a.instr.file}:{a.line} {a.instr.opcode} {a.cls} step {a.coef} width {a.width} B")
    warps = max(1, -(-(ev.threads or 32) // 32))
    tm = re.search(r"\.target\s+sm_(\d+)", artifacts.ptx)
    target = f"cuda:{tm.group(1)}" if tm else "cuda"
    text, ntok = summary.build(ev.ptx.name, target, warps, [], {}, findings, roof, header)
    d = Decomposition(
        kernel=ev.ptx.name,
        target=target,
        num_warps=warps,
        nodes=[],
        sass_lines=ev.sass_lines,
        ptxas=ev.ptxas,
        roofline=roof,
        findings=findings,
        summary=text,
        summary_tokens=ntok,
        token_rule=TOKEN_RULE,
        warnings=warnings,
        unchecked=pt.ranking.unchecked(ev, PATTERNS, lambda p: p.id in STATIC),
    )
    return relocate(d, ev.ptx.name, f) if f.source_file else d


def relocate(d: Decomposition, kernel: str, f: TaskFacts) -> Decomposition:
    """References to the compiled copy (`<scratch>/<kernel>.cu:N`) rewritten into the task file: line
    `f.source_line + N - 1` of `f.source_file`, where the CUDA_SOURCE literal opens."""
    pat = re.compile(r"[^\s:,;()\[\]]*" + re.escape(kernel) + r"\.cu:(\d+)")

    def line(n: int) -> int:
        return f.source_line + n - 1

    def sub(text: str) -> str:
        return pat.sub(lambda m: f"{f.source_file}:{line(int(m.group(1)))}", text)

    for fd in d.findings:
        fd.locations = [sub(x) for x in fd.locations]
        fd.evidence = [sub(x) for x in fd.evidence]
    for r in d.sass_lines:
        if r.file.endswith(f"{kernel}.cu"):
            r.file, r.line = f.source_file, line(r.line)
    d.summary = sub(d.summary)
    return d
