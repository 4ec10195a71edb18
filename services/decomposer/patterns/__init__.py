"""The bottleneck pattern library: named patterns, each a predicate over the evidence, one module per family.

A pattern is data (id, description, default severity, the change-description kinds that address it, the
transformation that would answer it when one exists) plus one small pure function over `Evidence` that
returns a `Match` or None; an optional second function reads dynamic evidence (ncu counters). Each family
module keeps its table (`PATTERNS`) with every entry right after its function; adding a pattern = one
function + one `PATTERNS.append(Pattern(...))` next to it + a planted case and a clean one in the corpus.

Severity orders findings first, `score` (estimated share of the kernel's time at stake, 0..1) second.
Thresholds quoted from NVIDIA's ncu rules come from /work/shared/GPU.md.
"""

from __future__ import annotations

from services.decomposer.evidence import Evidence
from services.decomposer.patterns import (
    control,
    counters,
    memory,
    occupancy,
    shared_memory,
    tensor_cores,
)
from services.decomposer.patterns import ranking as _ranking
from services.decomposer.patterns.base import SEVERITY_RANK, Match, Pattern, static_none
from services.decomposer.patterns.control import warp_divergence
from services.decomposer.patterns.counters import roofline_far_below
from services.decomposer.patterns.occupancy import (
    launch_bound_tiny_kernel,
    register_spills,
    small_grid,
    tail_effect,
)
from services.decomposer.patterns.ranking import finding, rank
from shared.tools.decompose import Finding, Unchecked

FAMILIES = (memory, shared_memory, tensor_cores, occupancy, control, counters)
PATTERNS: tuple[Pattern, ...] = tuple(p for fam in FAMILIES for p in fam.PATTERNS)


def match(ev: Evidence, patterns: tuple[Pattern, ...] = PATTERNS) -> list[Finding]:
    """Every matching pattern, most important first (see `ranking.rank`)."""
    return _ranking.match(ev, patterns)


def unchecked(ev: Evidence, patterns: tuple[Pattern, ...] = PATTERNS) -> list[Unchecked]:
    """The TTGIR path's unchecked patterns (see `ranking.unchecked`)."""
    return _ranking.unchecked(ev, patterns, lambda p: p.static is not static_none)


__all__ = [
    "PATTERNS",
    "SEVERITY_RANK",
    "Match",
    "Pattern",
    "finding",
    "launch_bound_tiny_kernel",
    "match",
    "rank",
    "register_spills",
    "roofline_far_below",
    "small_grid",
    "tail_effect",
    "unchecked",
    "warp_divergence",
]
