"""Layer 3, pure: the speedup decision from a bench_ab record, and the roofline bound that caps it."""

from __future__ import annotations

from services.verifier.policy import VerifyPolicy
from shared.messages import Measurement
from shared.tools.bench import BenchABOutput
from shared.tools.task import TaskManifest


def full_cost(manifest: TaskManifest) -> tuple[float, float] | None:
    """(flops, bytes) at the full shape from the task's formulas; None when it has none (KernelBench)."""
    for c in manifest.costs:
        if c.shape_name == "full":
            return c.flops, c.bytes_moved
    return None


def judge_speedup(
    ab: BenchABOutput, manifest: TaskManifest, policy: VerifyPolicy
) -> tuple[list[str], list[Measurement]]:
    """Reasons to reject (empty = accept) and the measurements behind the decision."""
    reasons: list[str] = []
    ms = [
        Measurement(
            name="speedup",
            value=ab.speedup,
            unit="x (baseline median / candidate median)",
            low=ab.ci_low,
            high=ab.ci_high,
        ),
        Measurement(
            name="baseline_median_ms",
            value=ab.a.stats.median_ms,
            unit="ms",
            low=ab.a.stats.p20_ms,
            high=ab.a.stats.p80_ms,
        ),
        Measurement(
            name="candidate_median_ms",
            value=ab.b.stats.median_ms,
            unit="ms",
            low=ab.b.stats.p20_ms,
            high=ab.b.stats.p80_ms,
        ),
    ]
    cost = full_cost(manifest)
    if cost is None:
        ms.append(Measurement(name="roofline_ms", not_measured="the task has no flops/bytes_moved formulas"))
    elif ab.a.stats.median_ms < (floor_ms := policy.impossible_below_s(*cost) * 1e3):
        # The original itself beats the bound: the task's formulas overstate its work (H200 r52: a
        # captured output counted as read), so the bound can neither refuse a candidate nor end a job
        ms.append(Measurement(
            name="roofline_ms",
            not_measured=f"the original's median {ab.a.stats.median_ms:.4g} ms is below the roofline bound "
                         f"{policy.roofline_s(*cost) * 1e3:.4g} ms / {policy.roofline_slack} (flops "
                         f"{cost[0]:.3g}, bytes {cost[1]:.3g}): the task's flops/bytes_moved overstate the "
                         "work; fix them to get the impossible-speedup check and the roofline stop back",
        ))
    else:
        bound_ms = policy.roofline_s(*cost) * 1e3
        ms.append(
            Measurement(
                name="roofline_ms",
                value=bound_ms,
                unit="ms (least time at the measured ceilings)",
                low=floor_ms,
            )
        )
        if ab.b.stats.median_ms < floor_ms:
            reasons.append(
                f"impossible speedup: the candidate's median {ab.b.stats.median_ms:.4g} ms is below "
                f"the roofline bound {bound_ms:.4g} ms / {policy.roofline_slack} (flops {cost[0]:.3g} at "
                f"{policy.tensor_flops_per_s / 1e12:.0f} TFLOP/s, bytes {cost[1]:.3g} at "
                f"{policy.copy_bytes_per_s / 1e12:.2f} TB/s): it skips work or hides it from the timer"
            )
    need = 1.0 + policy.min_gain
    if ab.ci_low <= need:
        reasons.append(
            f"no significant gain: speedup {ab.speedup:.3f}x, 95 % CI [{ab.ci_low:.3f}, "
            f"{ab.ci_high:.3f}]; accepting needs the lower bound above {need:.3f}"
        )
    return reasons, ms
