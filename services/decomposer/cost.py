"""Cost-aware severity: the time each finding can plausibly save, and severity capped by it. Pure.

The kernel's time is measured when the caller gives one (`TaskFacts.measured_s`) or ncu counters carry
`gpu__time_duration.sum` (its unit checked against `gpc__cycles_elapsed.max` at a plausible clock), else
unknown. Its work floor is the roofline of what the kernel could reach: copy bandwidth for its bytes, and
for its FLOPs the peak of the units it could use (a kernel with dots: the tensor cores, tf32 for an fp32
dot, 3xTF32 under the 'exact' policy; no dots: fp32 CUDA cores). A measured time also holds what every
launch pays whatever its work (`DeviceFacts.min_kernel_s`, the shortest kernel measured on the device:
launch, first-load latency, drain), so the floor a measured time is held against is work + that.

  measured:  saves = min(score x T, T - floor)    a kernel within 10 % of its floor gains < 10 %: every
                                                  finding is info ("cost not borne out")
  modelled:  saves = work x s / (1 - s), s = min(score, 0.9): the pattern's share of time at stake
             turned into time on top of the work floor (no measurement: severities stay the pattern's own)
  neither:   saves unknown (no FLOP/byte formulas)
A time more than 2x faster than the work floor is not this work's (another shape or kernel): it is ignored.
With a measured time, a finding that saves < 10 % of it is capped at low, < 25 % at medium.

Why the launch time counts (H200 run r33, ncu): clean Triton row reductions reading 67 MB took 18.0-19.2 us
against a 15.4 us work floor (80-86 %, so their stall findings stayed medium), and a clean 33.6 MB bf16 row
sum took 13.2 us against 7.7 us (59 %: its latency_bound finding was high, "saves 3.4 us" of a gap that is
mostly launch). With the 2.37 us per launch the reductions are at 93-99 % of their floor and the row sum at
76 %; kernels of 100 MB and more move by a few percent at most.
"""

from __future__ import annotations

from shared.tools.decompose import Finding, Severity, TaskFacts

AT_ROOF = 0.9  # floor / measured >= 0.9: within 10 % of the roofline
# floor / measured above this: the time cannot be this work's (cache-resident reuse lets a kernel beat its
# byte formula's floor by up to ~1.5x on the H200 corpus, gather_indices; 2x is not that)
IMPLAUSIBLE = 2.0
_TIME_UNITS = (1e-9, 1e-6, 1e-3, 1.0)  # ncu prints gpu__time_duration in ns, us, ms or s
_CLOCK_HZ = (0.7e9, 2.3e9)  # a plausible SM clock range (H200: up to 1.98 GHz)


def ncu_time_s(ncu: dict[str, float]) -> float | None:
    """gpu__time_duration.sum in seconds: the unit whose implied clock (elapsed cycles / time) is a
    plausible GPU clock; None when no unit fits or a counter is missing."""
    t, cyc = ncu.get("gpu__time_duration.sum"), ncu.get("gpc__cycles_elapsed.max")
    if not t or not cyc or t <= 0:
        return None
    fits = [t * u for u in _TIME_UNITS if _CLOCK_HZ[0] <= cyc / (t * u) <= _CLOCK_HZ[1]]
    return fits[0] if len(fits) == 1 else None


def kernel_time(facts: TaskFacts) -> tuple[float | None, str]:
    if facts.measured_s:
        return facts.measured_s, "measured time"
    if facts.dynamic is not None and (t := ncu_time_s(facts.dynamic.ncu)) is not None:
        return t, "ncu gpu__time_duration"
    return None, ""


def work_floor(facts: TaskFacts, dot_dtypes: list[str]) -> float | None:
    """The roofline floor of the kernel's work, bytes and FLOPs alone (see the module doc)."""
    if facts.flops is None and facts.bytes_moved is None:
        return None
    d = facts.device
    if not dot_dtypes:
        peak = d.fp32_flops_per_s
    elif all(t in ("f32", "float32") for t in dot_dtypes):
        tf32 = d.bf16_flops_per_s / 2  # dense tf32 runs at half the bf16 rate on Hopper tensor cores
        peak = tf32 if facts.precision == "allow_tf32" else tf32 / 3  # 3xTF32 keeps fp32 accuracy
    else:
        peak = d.bf16_flops_per_s
    return max((facts.bytes_moved or 0) / d.copy_bytes_per_s, (facts.flops or 0) / peak)


def achievable_floor(facts: TaskFacts, dot_dtypes: list[str]) -> float | None:
    """The least time a launch of this work can take: its work floor plus the device's shortest kernel."""
    work = work_floor(facts, dot_dtypes)
    return None if work is None else work + facts.device.min_kernel_s


def _cap(sev: Severity, to: Severity) -> Severity:
    order = ("high", "medium", "low", "info")
    return order[max(order.index(sev), order.index(to))]


def apply(
    found: list[tuple[Finding, bool]],
    facts: TaskFacts,
    dot_dtypes: list[str],
    outside: dict[str, float] | None = None,
) -> None:
    """Set each finding's `saves_s` and `cost`, and cap severities where a measured time says the cost
    is not there. A capped cause stays a cause: among info findings the code's own come first. Patterns in
    `outside` save time outside this kernel's duration (fusion, launch overhead): costed, never capped."""
    t, src = kernel_time(facts)
    work = work_floor(facts, dot_dtypes)
    if t is not None and work is not None and work / t > IMPLAUSIBLE:
        t = None  # faster than twice its work floor: the time is not this work's (another shape or kernel)
    floor = achievable_floor(facts, dot_dtypes)
    at_roof = t is not None and floor is not None and floor / t >= AT_ROOF
    for i, (f, cause) in enumerate(found):
        s = min(f.score, 0.9)
        if f.pattern in (outside or {}):
            base = t if t is not None else (work * s / (1 - s) if work is not None else 0.0)
            f.saves_s = max(s * base, s * (outside or {})[f.pattern])
            f.cost = (
                f"modelled: saves time outside this kernel's own duration (another kernel's traffic or a launch): "
                f"~{f.saves_s * 1e6:.1f} us"
            )
            continue
        if t is not None and floor is not None and work is not None:
            f.saves_s = max(0.0, min(s * t, t - floor))
            f.cost = (
                f"{src} {t * 1e6:.1f} us, floor {floor * 1e6:.1f} us (roofline {work * 1e6:.1f} us + "
                f"launch {facts.device.min_kernel_s * 1e6:.2f} us; {100 * floor / t:.0f} %): "
                f"saves <= {f.saves_s * 1e6:.1f} us"
            )
            share = f.saves_s / t
            if at_roof:
                sev: Severity = "info"
                f.evidence.append(
                    f"cost not borne out: the kernel runs at {100 * floor / t:.0f} % of its floor "
                    "(roofline + launch)"
                )
            else:
                sev = _cap(f.severity, "low" if share < 0.10 else "medium" if share < 0.25 else "high")
            if sev != f.severity:
                f.severity = sev
            found[i] = (f, cause)  # a costed-down cause still outranks counter-only symptoms
        elif work is not None:
            f.saves_s = work * s / (1 - s)
            f.cost = f"modelled: floor {work * 1e6:.1f} us x share {s:.2f}/(1-{s:.2f}) (no measured time)"
