"""The pattern record (`Pattern`, `Match`) and the helpers every family's predicates share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from services.decomposer.evidence import Access, Evidence
from shared.parsers.ttgir import defining_op
from shared.tools.decompose import Severity, Transformation

SEVERITY_RANK: dict[Severity, int] = {"high": 0, "medium": 1, "low": 2, "info": 3}


@dataclass(frozen=True)
class Match:
    score: float
    locations: list[str]
    evidence: list[str]
    severity: Severity | None = None  # overrides the pattern's default
    # override the pattern's fixes where this kernel fails a fix's precondition (or needs another fix)
    transformations: tuple[Transformation, ...] | None = None
    fix_transform: str | None = None


@dataclass(frozen=True)
class Pattern:
    id: str
    description: str
    severity: Severity
    transformations: tuple[Transformation, ...]
    static: Callable[[Evidence], Match | None]
    dynamic: Callable[[Evidence], Match | None] | None = None
    # A transformation of shared/transforms/ that answers this pattern, by its stable name (no import):
    # the planner may apply it instead of a free-form change. "" = none yet.
    fix_transform: str = ""
    # What the static predicate reads beyond the TTGIR/PTX text: "grid", "ptxas", "sass", "ptx", "costs"
    # (FLOP/byte formulas), "measured" (a kernel time), "ncu" (counters). Missing -> listed as unchecked.
    requires: tuple[str, ...] = ()
    # False when what the fix saves is not in this kernel's own time (a fusion saves the other kernel's
    # traffic, launch overhead is outside the measured duration): the roofline cap does not apply
    cost_in_kernel: bool = True
    outside_saves_s: float = 0.0  # for such a pattern: the least time its fix saves (e.g. one launch)


def _share(ev: Evidence, a: Access) -> float:
    """Share of the kernel's global bytes per program that this access moves (loops weigh x4)."""

    def w(x: Access) -> float:
        return x.bytes_per_program * (4 if x.in_loop else 1)

    total = sum(w(x) for x in ev.accesses if x.kind != "atomic") or 1.0
    return min(1.0, w(a) / total)


def _locs(ev: Evidence, accs: list[Access]) -> list[str]:
    out: list[str] = []
    for a in accs:
        loc = ev.loc(a.op)
        if loc and loc not in out:
            out.append(loc)
        for s in ev.sass_loc(a.line):
            if s not in out:
                out.append(s)
    return out


def _best(
    ev: Evidence,
    accs: list[Access],
    per: Callable[[Access], float],
    why: Callable[[Access], str],
    severity: Severity | None = None,
) -> Match | None:
    if not accs:
        return None
    scored = sorted(accs, key=lambda a: -per(a))
    score = min(1.0, sum(per(a) for a in scored))
    return Match(round(score, 3), _locs(ev, scored), [why(a) for a in scored[:4]], severity)


def _at(ev: Evidence, op) -> list[str]:
    loc = ev.loc(op)
    return ([loc] if loc else []) + ev.sass_loc(op.loc.line if op.loc else None)


def _is_dot_kernel(ev: Evidence) -> bool:
    return bool(ev.dots)


def _ancestors_ops(ev: Evidence, value: str, limit: int = 300) -> list:
    mod = ev.mod
    seen: set[str] = set()
    out = []
    todo = [value]
    while todo and len(seen) < limit:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in mod.iter_init:
            todo.append(mod.iter_init[v])
            continue
        op = defining_op(mod, v)
        if op is None or op.name in ("scf.for", "scf.while"):
            continue
        out.append(op)
        todo.extend(op.operands)
    return out


def _depends_on_loop(ev: Evidence, value: str, loop_id: int) -> bool:
    loop = ev.mod.ops[loop_id]
    mod = ev.mod
    seen: set[str] = set()
    todo = [value]
    while todo and len(seen) < 400:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in loop.block_args:
            return True
        op = defining_op(mod, v)
        if op is None:
            continue
        if loop_id in op.loops and op.name not in ("arith.constant",) and op.name == "tt.load":
            return True
        if op.id == loop_id:
            return True
        todo.extend(op.operands)
    return False


def static_none(ev: Evidence) -> Match | None:
    return None


def _ptx_locs(instrs) -> list[str]:
    """file:line of PTX instructions (ptx_lanes.PtxInstr), in order, each once."""
    return list(dict.fromkeys(f"{i.file}:{i.line}" for i in instrs if i.file))[:4]


def _ptx_loop(ev, prefixes: tuple[str, ...]) -> list:
    """PTX instructions inside a loop whose opcode starts with one of `prefixes` (Triton or CUDA PTX)."""
    k = ev.ptx
    if k is None:
        return []
    return [i for i in k.instrs if i.opcode.startswith(prefixes) and k.in_loop(i.idx)]
