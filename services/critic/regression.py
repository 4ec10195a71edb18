"""When a state-change event is a reason to roll a kernel back to its previous verified version.

A rollback must be the patch's doing, not the device's or another kernel's (issue 17: a low-bandwidth
episode caused by a copy kernel rolled back matmul, 21 % of the time; a re-run of the demo, which runs the
untuned kernels again, rolled back the first run's verified patch). So an event implicates the version in
force only when
- it is a start edge of a rollback kind, after the patch was published, not acted on before;
- the telemetry is about that version: the hot kernel's launch config (KernelShare.config) agrees with the
  patch's config on every key both name (another config is another version: the recorded trace, a re-run
  workload in its untuned config);
- a `regression` detector names the kernel outright; or, for `anomaly` and `bandwidth_low` (device-wide
  signals), the kernel is the event's hottest with at least HOT_SHARE of GPU time, and its own time per
  launch rose more than MOVED above what it was first seen at under this version.
"""

from __future__ import annotations

from services.critic.state import KernelState, VerifiedEntry, entry
from shared.messages import KernelShare, StateChangeEvent

ROLLBACK_EVENTS: tuple[str, ...] = ("regression", "anomaly", "bandwidth_low")
NAMED_EVENTS: tuple[str, ...] = ("regression",)  # the detector itself blames the kernel
# The telemetry service calls a kernel "the hot kernel" at >= 30 % of timed GPU time (HOT_SHARE in
# services/telemetry/detectors.py); below that a device-wide episode is mostly someone else's time.
HOT_SHARE = 0.3
# Sampled launch durations of one config vary ~1 % on the H200 (examples/traces: the untuned matmul's
# 625 launches span 1583-1682 us, +-3 %); a rise beyond 10 % is the kernel's own time moving.
MOVED = 0.10


def own_share(event: StateChangeEvent, kernel: str) -> KernelShare | None:
    return next((k for k in event.hot_kernels if k.kernel == kernel), None)


def other_version(own: KernelShare, cur: VerifiedEntry) -> str | None:
    """Why the telemetry describes a version other than `cur`, or None (the same, or not known)."""
    differ = {k: (own.config[k], cur.config[k]) for k in own.config.keys() & cur.config.keys()
              if own.config[k] != cur.config[k]}
    if not differ:
        return None
    shown = ", ".join(f"{k}={a} (patch {b})" for k, (a, b) in sorted(differ.items()))
    return f"the telemetry is of another version of {own.kernel}: it ran {shown}"


def judge(event: StateChangeEvent, state: KernelState) -> tuple[str | None, str]:
    """(the rollback reason, or None) and, when None, why the event does not implicate the patch."""
    if event.edge != "start" or event.event not in ROLLBACK_EVENTS:
        return None, "not a rollback event"
    own = own_share(event, state.kernel)
    cur = entry(state, state.current)
    if own is None or cur is None:
        return None, "the kernel is not hot or has no verified version in force"
    if event.id in state.rollbacks:
        return None, "this event already rolled the kernel back"
    if event.ts <= cur.ts:
        return None, "the event started before this version was published: not its doing"
    if (why := other_version(own, cur)) is not None:
        return None, why
    head = (f"{event.event} start on {event.node}/{event.gpu} ({event.detector}) with {state.kernel} hot "
            f"({own.share:.0%} of GPU time) after patch {cur.candidate_id} (v{cur.version})")
    if event.event in NAMED_EVENTS:
        return f"{head}: {event.detail or 'no detail'}", ""
    hottest = max(event.hot_kernels, key=lambda k: k.share)
    if hottest.kernel != state.kernel or own.share < HOT_SHARE:
        return None, (f"{state.kernel} has {own.share:.0%} of GPU time and {hottest.kernel} "
                      f"{hottest.share:.0%}: the episode is not {state.kernel}'s own")
    base = state.seen_mean_us.get(cur.candidate_id)
    if own.mean_us is None or base is None:
        return None, (f"{state.kernel}'s time per launch under v{cur.version} has no earlier figure to "
                      "compare with: a move cannot be shown")
    if own.mean_us <= base * (1 + MOVED):
        return None, (f"{state.kernel}'s time per launch {own.mean_us:.4g} us is within {MOVED:.0%} of "
                      f"{base:.4g} us first seen under v{cur.version}: its own metrics did not move")
    return (f"{head}: its time per launch rose from {base:.4g} to {own.mean_us:.4g} us; "
            f"{event.detail or 'no detail'}"), ""


def regressed(event: StateChangeEvent, state: KernelState) -> str | None:
    """The rollback reason when `event` implicates the kernel's version in force, else None."""
    return judge(event, state)[0]


def record_sighting(event: StateChangeEvent, state: KernelState) -> bool:
    """Remember the kernel's first time per launch seen under the version in force (True when new)."""
    own, cur = own_share(event, state.kernel), entry(state, state.current)
    if own is None or cur is None or own.mean_us is None or cur.candidate_id in state.seen_mean_us:
        return False
    if event.ts <= cur.ts or other_version(own, cur) is not None:
        return False
    state.seen_mean_us[cur.candidate_id] = own.mean_us
    return True
