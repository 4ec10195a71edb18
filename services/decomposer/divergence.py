"""Static warp divergence from PTX: branches whose condition differs between lanes of one warp. Pure.

Both paths read the same PTX analysis (services/decomposer/ptx_lanes.py): a Triton kernel's PTX (TTGIR's
`scf.if` conditions are scalars, uniform over a program, so only the PTX could show a lane split) and a
CUDA C++ kernel's. A "lane" branch (parity, a mask or modulo of the lane below 32) splits every warp; a
"data" branch splits where the data each lane loaded differs, which only counters measure
(smsp__thread_inst_executed_per_inst_executed, the ncu form of the pattern). Bound checks (`i < n`, linear
in the lane) split at most one warp per boundary and are not counted.
"""

from __future__ import annotations

from services.decomposer.patterns.base import Match
from services.decomposer.ptx_lanes import DivergentBranch, PtxKernel


def _loc(b: DivergentBranch) -> str:
    return f"{b.instr.file}:{b.instr.line}" if b.instr.file else ""


def warp_divergence(ptx: PtxKernel | None) -> Match | None:
    if ptx is None or not ptx.divergent_branches:
        return None
    lane = [b for b in ptx.divergent_branches if b.kind == "lane"]
    hits = lane or ptx.divergent_branches
    # share of the hot body run by part of a warp: half the lanes idle through it
    frac = max(b.fraction for b in hits)
    hot = any(b.in_loop for b in hits)
    score = round((0.5 if lane else 0.15) * frac * (1.0 if hot else 0.5), 3)
    sev = ("high" if hot and frac >= 0.2 else "medium") if lane else "low"
    ev = [
        f"PTX {b.instr.opcode} on a {'lane-index (parity/mask)' if b.kind == 'lane' else 'loaded-data'} "
        f"predicate {b.instr.pred}: {b.region} of {b.body} instructions of the "
        f"{'loop body' if b.in_loop else 'kernel'} ({100 * b.fraction:.0f} %) run for part of each warp"
        for b in hits[:3]
    ]
    if not lane:
        ev.append("data-dependent: how often warps split is measured only by ncu (active threads/instr)")
    return Match(score, list(dict.fromkeys(x for b in hits if (x := _loc(b)))), ev, sev)  # type: ignore[arg-type]
