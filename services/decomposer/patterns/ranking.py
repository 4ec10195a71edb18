"""Findings from pattern matches, ranked: causes before counter-only symptoms, then severity, then score."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.decomposer import cost
from services.decomposer.evidence import Evidence
from services.decomposer.patterns.base import SEVERITY_RANK, Match, Pattern
from shared.tools.decompose import Finding, Unchecked


def finding(p: Pattern, static: Match | None, dynamic: Match | None) -> tuple[Finding, bool] | None:
    """One pattern's Finding from its static and dynamic matches (None when neither fired), and whether it
    is a cause: a static match of severity above info, i.e. something the code itself shows."""
    ms = [m for m in (static, dynamic) if m]
    if not ms:
        return None
    sev = min((m.severity or p.severity for m in ms), key=lambda s: SEVERITY_RANK[s])
    f = Finding(
        pattern=p.id,
        severity=sev,
        score=max(m.score for m in ms),
        locations=list(dict.fromkeys(x for m in ms for x in m.locations if x)),
        evidence=[e for m in ms for e in m.evidence],
        transformations=list(
            next((m.transformations for m in ms if m.transformations is not None), p.transformations)
        ),
        fix_transform=next((m.fix_transform for m in ms if m.fix_transform is not None), p.fix_transform),
    )
    return f, static is not None and sev != "info"


def rank(found: list[tuple[Finding, bool]]) -> list[Finding]:
    """Most important first: causes (static evidence in the code, with locations) before counter-only
    symptoms (latency-bound, a dominant stall, an occupancy gap: ncu says what, not where or why); within
    each, by severity, then the time it can save (score where that is unknown). A symptom keeps its own severity and stays in the list, and the first
    cause names the code that produces it.

    NVIDIA's ncu rules are layered the same way: the speed-of-light and latency rules are overviews that
    point at the sections holding the cause. On the H200, ranking symptoms by severity alone put a
    counter-only symptom above the planted cause in 8 of 41 cases (run 9); within a severity only, 3 of 7
    (run 5)."""

    def key(fc: tuple[Finding, bool]) -> tuple[int, int, float, float]:
        f, cause = fc
        return (0 if cause else 1, SEVERITY_RANK[f.severity], -(f.saves_s or 0.0), -f.score)

    order = sorted(found, key=key)
    return [f for f, _ in order]


def outside(patterns: tuple[Pattern, ...]) -> dict[str, float]:
    """Patterns whose saving lies outside the kernel's own duration -> the least time their fix saves."""
    return {p.id: p.outside_saves_s for p in patterns if not p.cost_in_kernel}


def match(ev: Evidence, patterns: tuple[Pattern, ...]) -> list[Finding]:
    """Every matching pattern, costed (services/decomposer/cost.py), most important first (see `rank`)."""
    found = []
    for p in patterns:
        dynamic = p.dynamic(ev) if p.dynamic is not None and ev.dyn else None
        if fc := finding(p, p.static(ev), dynamic):
            found.append(fc)
    cost.apply(found, ev.facts, [d.a_dtype for d in ev.dots], outside(patterns))
    return rank(found)


_NEEDS = {
    "grid": "the launch grid (launch_grid tool / TaskFacts.grid)",
    "ptxas": "ptxas -v (registers, spills)",
    "sass": "SASS with line info",
    "ptx": "the PTX",
    "costs": "the task's FLOP/byte formulas",
    "measured": "a measured kernel time",
    "ncu": "ncu counters (GPU)",
}


def available(ev: Any) -> set[str]:
    """Which kinds of evidence this kernel's Evidence (or NativeEvidence) holds."""
    f = ev.facts
    have = {
        "grid": ev.programs is not None,
        "ptxas": ev.ptxas is not None,
        "sass": bool(ev.sass_lines) or ev.sass is not None,
        "ptx": ev.ptx is not None,
        "costs": f.flops is not None or f.bytes_moved is not None,
        "measured": f.measured_s is not None,
        "ncu": bool(f.dynamic is not None and f.dynamic.ncu),
    }
    return {k for k, v in have.items() if v}


def unchecked(
    ev: Any, patterns: tuple[Pattern, ...], has_static: Callable[[Pattern], bool]
) -> list[Unchecked]:
    """Patterns that could not be checked here: counter-only ones without ncu, a static predicate whose
    inputs are missing, and (CUDA C++) TTGIR-only predicates."""
    have = available(ev)
    out = []
    for p in patterns:
        if not has_static(p):
            if p.dynamic is None:
                out.append(
                    Unchecked(pattern=p.id, reason="no predicate for this kind of kernel (TTGIR-only)")
                )
            elif "ncu" not in have:
                out.append(Unchecked(pattern=p.id, needs=["ncu"], reason="counter-only: " + _NEEDS["ncu"]))
            continue
        missing = [r for r in p.requires if r not in have]
        if missing:
            out.append(
                Unchecked(
                    pattern=p.id,
                    needs=missing,
                    reason="needs " + "; ".join(_NEEDS.get(m, m) for m in missing),
                )
            )
    return out
