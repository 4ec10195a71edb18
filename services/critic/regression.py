"""When a state-change event is a reason to roll a kernel back to its previous verified version."""

from __future__ import annotations

from services.critic.state import KernelState, entry
from shared.messages import StateChangeEvent

# A regression detector names the kernel outright; an anomaly or low bandwidth that starts while a patched
# kernel is hot is taken as the patch's doing (the patch is the newest change to that kernel).
ROLLBACK_EVENTS: tuple[str, ...] = ("regression", "anomaly", "bandwidth_low")


def regressed(event: StateChangeEvent, state: KernelState) -> str | None:
    """The rollback reason when `event` implicates the kernel's version in force, else None."""
    if event.edge != "start" or event.event not in ROLLBACK_EVENTS:
        return None
    if state.kernel not in {k.kernel for k in event.hot_kernels}:
        return None
    cur = entry(state, state.current)
    if cur is None or event.id in state.rollbacks:
        return None
    if event.ts <= cur.ts:
        return None  # the event started before this version was published: not its doing
    share = next(k.share for k in event.hot_kernels if k.kernel == state.kernel)
    return (f"{event.event} start on {event.node}/{event.gpu} ({event.detector}) with {state.kernel} hot "
            f"({share:.0%} of GPU time) after patch {cur.candidate_id} (v{cur.version}): "
            f"{event.detail or 'no detail'}")
