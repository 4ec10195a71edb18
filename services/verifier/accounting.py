"""Funnel accounting: per job and overall, how many candidates each layer stopped and its GPU seconds.

A candidate is "stopped" by the layer of its last verdict when that verdict failed; a candidate whose last
verdict passed went through; one whose last verdict was skipped ended unmeasured (no GPU); one whose last
verdict is `withdrawn` was dropped because its job ended (not stopped by any layer). Pure.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import msgspec

from shared.messages import Layer, Verdict

LAYERS: tuple[Layer, ...] = ("static", "micro", "full")


class LayerCount(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    layer: Layer
    reached: int = 0  # candidates with a verdict at this layer
    stopped: int = 0  # candidates rejected here
    passed: int = 0
    skipped: int = 0
    needs_review: int = 0
    gpu_seconds: float = 0.0
    wall_s: float = 0.0


class FunnelStats(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    candidates: int
    accepted: int  # last verdict is a passing full layer
    unmeasured: int  # last verdict skipped (no GPU)
    withdrawn: int = 0  # the job ended before the funnel finished the candidate
    layers: list[LayerCount]
    gpu_seconds: float


class FunnelReport(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    overall: FunnelStats
    jobs: dict[str, FunnelStats]  # by job_id ("" for verdicts outside a job)


def _stats(verdicts: list[Verdict]) -> FunnelStats:
    by_candidate: dict[str, dict[Layer, Verdict]] = defaultdict(dict)
    for v in verdicts:
        by_candidate[v.candidate_id][v.layer] = v  # a redelivered verdict replaces the earlier copy
    counts = {layer: LayerCount(layer=layer) for layer in LAYERS}
    accepted = unmeasured = withdrawn = 0
    for layers in by_candidate.values():
        last = max(layers.values(), key=lambda v: LAYERS.index(v.layer))
        withdrawn += last.status == "withdrawn"
        for v in layers.values():
            if v.status == "withdrawn":
                continue  # the layer never ran
            c = counts[v.layer]
            c.reached += 1
            c.passed += v.status == "pass"
            c.skipped += v.status == "skipped"
            c.needs_review += v.needs_review
            c.gpu_seconds += v.gpu_seconds
            c.wall_s += v.wall_s
        if last.status == "fail":
            counts[last.layer].stopped += 1
        elif last.status == "skipped":
            unmeasured += 1
        elif last.layer == "full":
            accepted += 1
    layer_list = list(counts.values())
    return FunnelStats(
        candidates=len(by_candidate),
        accepted=accepted,
        unmeasured=unmeasured,
        withdrawn=withdrawn,
        layers=layer_list,
        gpu_seconds=sum(c.gpu_seconds for c in layer_list),
    )


def funnel_report(verdicts: Iterable[Verdict]) -> FunnelReport:
    all_verdicts = list(verdicts)
    by_job: dict[str, list[Verdict]] = defaultdict(list)
    for v in all_verdicts:
        by_job[v.job_id or ""].append(v)
    return FunnelReport(
        overall=_stats(all_verdicts), jobs={j: _stats(vs) for j, vs in sorted(by_job.items())}
    )
