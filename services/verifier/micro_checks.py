"""Layer 2, pure: run_correctness, honesty_probe and micro-bench records read into reasons and figures."""

from __future__ import annotations

from shared.messages import Measurement
from shared.tools.bench import BenchOutput
from shared.tools.honesty import HonestyOutput
from shared.tools.run import RunCorrectnessOutput

MAX_CASE_REASONS = 4  # failing cases quoted one by one; the rest are counted


def correctness_reasons(out: RunCorrectnessOutput) -> list[str]:
    reasons = []
    bad = [c for c in out.cases if c.status in ("fail", "error")]
    for c in bad[:MAX_CASE_REASONS]:
        reasons.append(f"wrong output on {c.shape_name} {c.shape} seed {c.seed}: {c.reason}")
    if len(bad) > MAX_CASE_REASONS:
        reasons.append(f"... and {len(bad) - MAX_CASE_REASONS} more failing cases ({out.summary})")
    if out.candidate_status != "ok":
        reasons.append(f"the candidate's process {out.candidate_status}: {out.candidate_message}")
    if writers := [c for c in out.cases if c.candidate_modified_inputs]:
        reasons.append(
            f"writes into its inputs ({writers[0].shape_name} seed {writers[0].seed} and "
            f"{len(writers) - 1} more cases)"
        )
    return reasons


def not_checked(out: RunCorrectnessOutput) -> list[str]:
    return sorted({f"{c.shape_name}: {c.reason}" for c in out.cases if c.status == "not_checked"})


def correctness_measurements(out: RunCorrectnessOutput) -> list[Measurement]:
    checked = [c for c in out.cases if c.status != "not_checked"]
    errs = [o.max_abs_err for c in checked for o in c.outputs if o.max_abs_err is not None]
    return [
        Measurement(
            name="correctness_cases_passed",
            value=float(sum(c.status == "pass" for c in checked)),
            unit=f"of {len(out.cases)} cases",
        ),
        Measurement(
            name="max_abs_err",
            value=max(errs) if errs else None,
            unit="",
            not_measured=None if errs else "no checked case produced comparable outputs",
        ),
    ]


def honesty_reasons(out: HonestyOutput) -> list[str]:
    return [f"cheat: {f.kind}: {f.detail}" + (f" (call {f.trial})" if f.trial else "") for f in out.findings]


# p20 and p80 of a normal distribution lie 0.8416 standard deviations either side of its median.
Z80 = 0.8416


def robust_cv(out: BenchOutput) -> float:
    """The CV a normal distribution with this p20-p80 spread would have: (p80 - p20) / (2 * 0.8416) / median.

    The plain CV is the stability figure GPU.md names, but on the H200 (run 6) a few host-delayed graph
    replays made it 42.7 % (honest vector_add) and 13.9 % (honest matmul) while p20-p80 spanned 0.7-3.7 % of
    the median: the tail, not the candidate, set it. This estimate keeps the 3 % bar for the bulk of the
    samples; a bimodal candidate (work on a side stream, a background thread) still widens p20-p80.
    """
    st = out.stats
    return (st.p80_ms - st.p20_ms) / (2 * Z80) / st.median_ms if st.median_ms > 0 else float("inf")


def cv_measurement(out: BenchOutput, attempt: int) -> Measurement:
    return Measurement(
        name=f"micro_cv_{attempt}",
        value=robust_cv(out),
        unit=f"robust (p20-p80); plain CV {out.stats.cv:.4f}",
        low=out.stats.p20_ms,
        high=out.stats.p80_ms,
    )


def stable(out: BenchOutput, max_cv: float) -> bool:
    return robust_cv(out) < max_cv
