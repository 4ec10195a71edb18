"""NATS adapter of the critic: durable consumers into services.critic.critic.Critic, nothing else.

Verdicts are decided on (`patches.verified.*` / `patches.rejected.*` / `failures.*`); candidates, job
updates and optimize requests are indexed for the evidence chain; state-change events are indexed and
checked for regressions of patched kernels (`patches.rollback.*`). On start the index is refilled from
stream history, so a restarted critic can still walk the chains of jobs that were running.
"""

from __future__ import annotations

import os

from services.critic.critic import DEFAULT_GRACE_S, Critic
from shared.messages import Candidate, StateChangeEvent, Verdict
from shared.service import ServiceRuntime
from shared.signing import SIGNING_KEY_ENV, key_id_of, load_private_key
from shared.subjects import OPTIMIZE_REQUEST

INDEXED = ("candidates.>", "jobs.>", OPTIMIZE_REQUEST, "events.state.>", "verdicts.>")
# An incomplete chain is retried after these delays (s), ~15 s in all, past the critic's 10 s grace.
BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0)


async def setup(runtime: ServiceRuntime, *, grace_s: float = DEFAULT_GRACE_S) -> Critic:
    runtime.details["role"] = "critic"
    key_path = os.environ.get(SIGNING_KEY_ENV)  # `kpilot up` makes the key pair and sets this
    key = load_private_key(key_path) if key_path else None
    runtime.details["signing"] = f"ed25519 key {key_id_of(key)}" if key else "UNSIGNED: no signing key"
    if key is None:
        runtime.log.warning("no signing key: verified patches go out unsigned and fail every check",
                            fix=f"set {SIGNING_KEY_ENV} to the key `kpilot up` made (<state-dir>/signing/critic.key)")
    critic = Critic(runtime.bus, grace_s=grace_s, signing_key=key)
    runtime.details["replayed"] = str(await critic.replay(INDEXED))
    bus = runtime.bus
    await bus.consume("candidates.>", "critic-candidates", critic.on_message, Candidate)
    await bus.consume("jobs.>", "critic-jobs", critic.on_message)
    await bus.consume(OPTIMIZE_REQUEST, "critic-requests", critic.on_message)
    await bus.consume("events.state.>", "critic-events", critic.on_event, StateChangeEvent)
    await bus.consume("verdicts.>", "critic-verdicts", critic.on_verdict, Verdict,
                      max_deliver=len(BACKOFF) + 1, backoff=BACKOFF)
    return critic
