"""Counter-level patterns (ncu speed-of-light, stalls, occupancy gap) and the measured roofline."""

from __future__ import annotations

from services.decomposer.evidence import Evidence
from services.decomposer.patterns.base import (
    Match,
    Pattern,
    static_none,
)

PATTERNS: list[Pattern] = []  # this family's table, in rank-tie order; each entry follows its function


def _sol(ev: Evidence) -> tuple[float | None, float | None]:
    comp = ev.ncu("sm__throughput.avg.pct_of_peak_sustained_elapsed")
    mem = ev.ncu(
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    )
    return comp, mem


def latency_bound(ev: Evidence) -> Match | None:
    return None


def latency_bound_dyn(ev: Evidence) -> Match | None:
    comp, mem = _sol(ev)
    if comp is None or mem is None or comp >= 60 or mem >= 60:  # ncu rule: both < 60 % of peak
        return None
    return Match(
        round(0.8 - max(comp, mem) / 100, 3),
        [],
        [f"ncu: compute {comp:.0f} %, memory {mem:.0f} % of peak (both < 60 %: latency-bound)"],
    )


PATTERNS.append(
    Pattern(
        "latency_bound",
        "compute and memory throughput both < 60 % of peak (ncu)",
        "high",
        ("set_constexpr", "set_num_warps", "set_num_stages"),
        latency_bound,
        latency_bound_dyn,
        requires=("ncu",),
    )
)


def memory_throughput_bound_dyn(ev: Evidence) -> Match | None:
    comp, mem = _sol(ev)
    if mem is None or mem <= 80 or (comp is not None and comp > mem - 10):
        return None
    return Match(
        0.05,
        [],
        [
            (
                f"ncu: memory {mem:.0f} % of peak (> 80 %): at the bandwidth roof; gains come "
                "from fewer bytes (fusion, precision), not scheduling"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "memory_throughput_bound",
        "memory throughput > 80 % of peak (ncu): at the roof",
        "info",
        ("source_edit",),
        static_none,
        memory_throughput_bound_dyn,
        requires=("ncu",),
        fix_transform="eviction_policy",
    )
)


def compute_throughput_bound_dyn(ev: Evidence) -> Match | None:
    comp, mem = _sol(ev)
    if comp is None or comp <= 80 or (mem is not None and mem > comp - 10):
        return None
    return Match(0.05, [], [f"ncu: compute {comp:.0f} % of peak (> 80 %): compute-bound"])


PATTERNS.append(
    Pattern(
        "compute_throughput_bound",
        "compute throughput > 80 % of peak (ncu)",
        "info",
        ("source_edit",),
        static_none,
        compute_throughput_bound_dyn,
        requires=("ncu",),
    )
)


def stall_dominant_dyn(ev: Evidence) -> Match | None:
    issue = ev.ncu("smsp__issue_active.avg.per_cycle_active")
    if issue is None or issue >= 0.8:  # ncu rule: a stall matters while issue rate < 0.8
        return None
    stalls = {
        k: v
        for k, v in ev.dyn.items()
        if k.startswith(("smsp__average_warp_latency_issue_stalled_", "smsp__pcsamp_warps_issue_stalled_"))
    }
    # Shares within one family of counters, in one unit: the per-reason stall ratios against their own
    # sum. (Dividing them by ..._per_inst_issued.ratio, a different unit, gave "shares" of 290-790 on the
    # H200 and put this symptom above every diagnosis.)
    family = "smsp__average_warp_latency_issue_stalled_"
    if not any(k.startswith(family) for k in stalls):
        family = "smsp__pcsamp_warps_issue_stalled_"
    stalls = {k: v for k, v in stalls.items() if k.startswith(family)}
    total = sum(stalls.values())
    if not stalls or total <= 0:
        return None
    name, val = max(stalls.items(), key=lambda kv: kv[1])
    if val / total <= 0.30:  # ncu rule: > 30 % of cycles
        return None
    reason = name.split("stalled_")[-1].split(".")[0]
    # A stall is a symptom: scored at most 0.3, under the causal patterns it usually accompanies.
    return Match(
        round(val / total * 0.3, 3),
        [],
        [
            (
                f"ncu: stall '{reason}' is {100 * val / total:.0f} % of warp "
                f"cycles with issue rate {issue:.2f} (< 0.8)"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "stall_dominant",
        "one warp stall reason > 30 % of cycles at issue rate < 0.8 (ncu)",
        "medium",
        ("set_num_warps", "set_num_stages", "source_edit"),
        static_none,
        stall_dominant_dyn,
        requires=("ncu",),
    )
)


def achieved_occupancy_gap_dyn(ev: Evidence) -> Match | None:
    ach = ev.ncu("sm__warps_active.avg.pct_of_peak_sustained_active")
    theo = ev.ncu("sm__maximum_warps_per_active_cycle_pct")
    if ach is None or theo is None or theo - ach < 10:  # ncu rule: 10+ points below theoretical
        return None
    return Match(
        round((theo - ach) / 100, 3),
        [],
        [(f"ncu: achieved occupancy {ach:.0f} % vs theoretical {theo:.0f} %")],
    )


PATTERNS.append(
    Pattern(
        "achieved_occupancy_gap",
        "achieved occupancy 10+ points below theoretical (ncu)",
        "medium",
        ("set_constexpr", "set_grid", "set_num_warps"),
        static_none,
        achieved_occupancy_gap_dyn,
        requires=("ncu",),
    )
)


def roofline_far_below(ev: Evidence) -> Match | None:
    f = ev.facts
    if f.measured_s is None or (f.bytes_moved is None and f.flops is None):
        return None
    floor = max((f.bytes_moved or 0) / f.device.copy_bytes_per_s, (f.flops or 0) / f.device.bf16_flops_per_s)
    frac = floor / f.measured_s if f.measured_s > 0 else 0
    if frac >= 0.5:
        return None
    return Match(
        round(0.5 * (1 - frac), 3),
        [],
        [
            (
                f"measured {f.measured_s * 1e6:.1f} us vs roofline floor "
                f"{floor * 1e6:.1f} us ({100 * frac:.0f} % of the roof)"
            )
        ],
    )


PATTERNS.append(
    Pattern(
        "roofline_far_below",
        "measured time under half of the roofline bound",
        "medium",
        ("set_constexpr", "set_num_warps", "set_num_stages"),
        roofline_far_below,
        requires=("costs", "measured"),
    )
)
