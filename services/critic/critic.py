"""The critic's handlers: index what the chain needs, decide on each finished candidate once, roll back.

Kept apart from the adapter (service.py, which only wires consumers) and from the pure review, chain,
state and report modules; this is the only critic module that talks to NATS (publish and the `kernels`
KV bucket).
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import msgspec
import nats.errors
import nats.js.errors
import structlog
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.kv import KeyValue

from services.critic.chain import Chain, MessageIndex, build_chain, pattern_ids
from services.critic.regression import ROLLBACK_EVENTS, judge, record_sighting
from services.critic.report import IterationPoint, render_html, render_md
from services.critic.review import SPEEDUP, Decision, TaskBounds, review
from services.critic.state import (
    KernelState,
    VerifiedEntry,
    derived_id,
    entry,
    not_better,
    record_decided,
    record_proposed,
    record_rollback,
    record_verified,
    rollback_target,
    state_key,
)
from shared.bus import Bus
from shared.messages import (
    FailureRecord,
    Message,
    ProposedPatch,
    RejectedPatch,
    Rollback,
    StateChangeEvent,
    Verdict,
    VerifiedPatch,
    decode,
)
from shared.signing import sign
from shared.subjects import (
    failure_subject,
    patch_subject,
    sample_subject,
    stream_for,
    telemetry_subject,
    token,
)
from shared.tools.task import TaskManifest

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

SOURCE = "critic"
# Verdicts, candidates and job updates arrive on separate consumers, so a verdict can overtake its
# candidate. An incomplete chain is retried (bus back-off) for this long before it counts as broken;
# the verifier needs a candidate before it can publish a verdict, so 10 s is many times the lag.
DEFAULT_GRACE_S = 10.0
# On start the index is refilled from this much stream history (the consumers resume where they stopped,
# but what they acked before a restart is needed to walk chains of jobs still running).
REPLAY_S = 24 * 3600.0
KV_BUCKET = "kernels"


# Telemetry lookback when a vector or sample is not the last on its subject (the critic lagged behind).
FETCH_LOOKBACK = 64
FETCH_HOPS = 64


class ChainIncomplete(Exception):
    """The chain has a hole that may yet fill (a message on another consumer): retry later."""


class Critic:
    def __init__(self, bus: Bus, *, grace_s: float = DEFAULT_GRACE_S,
                 index: MessageIndex | None = None, signing_key: Ed25519PrivateKey | None = None) -> None:
        self.bus = bus
        self.signing_key = signing_key  # every verified patch is signed with it (shared/signing.py)
        self.grace_s = grace_s
        self.index = index or MessageIndex()
        self.log = structlog.get_logger().bind(service=SOURCE)
        self._kv: KeyValue | None = None
        self._lock = asyncio.Lock()  # verdicts and rollbacks both rewrite a kernel's state
        self._first_seen: dict[str, float] = {}

    # ------------------------------------------------------------ index

    async def on_message(self, msg: Message) -> None:
        self.index.add(msg)

    async def replay(self, subjects: tuple[str, ...], since_s: float = REPLAY_S) -> int:
        """Refill the index from stream history with throw-away consumers; decides nothing."""
        start = (datetime.now(UTC) - timedelta(seconds=since_s)).isoformat()
        n = 0
        for subject in subjects:
            stream = stream_for(subject.replace(">", "x")).name
            cfg = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_TIME, opt_start_time=start,
                                 ack_policy=AckPolicy.NONE, inactive_threshold=10.0)
            sub = await self.bus.js.pull_subscribe(subject, stream=stream, config=cfg)
            pending = (await sub.consumer_info()).num_pending
            while pending > 0:
                try:  # ask for no more than is pending, so no pull request outlives the replay
                    msgs = await sub.fetch(min(256, pending), timeout=2.0)
                except nats.errors.TimeoutError:
                    break
                pending -= len(msgs)
                for raw in msgs:
                    try:
                        self.index.add(decode(raw.data))
                        n += 1
                    except (msgspec.DecodeError, msgspec.ValidationError):
                        pass  # the live consumer dead-letters it with the reason
            await sub.unsubscribe()
        return n

    # ------------------------------------------------------------ verdicts

    async def on_verdict(self, v: Verdict) -> None:
        self.index.add(v)
        if v.status == "withdrawn":
            return  # its job ended before the funnel finished it: no patch, no rejection, no failure record
        if v.status != "fail" and v.layer != "full":
            return  # the candidate is not finished yet
        async with self._lock:
            state, rev = await self._load(v.kernel)
            if v.candidate_id in state.decided:
                return
            chain = build_chain(v, self.index)
            if chain.unresolved and v.status != "fail":
                first = self._first_seen.setdefault(v.candidate_id, time.monotonic())
                if time.monotonic() - first < self.grace_s:
                    raise ChainIncomplete("; ".join(chain.unresolved))
            self._first_seen.pop(v.candidate_id, None)
            decision = review(chain, await self._bounds(v.kernel))
            job = chain.candidate.job_id if chain.candidate else v.job_id
            if decision.accepted and (why := not_better(state, job, decision)):
                await self._reject(v, chain, [why], decision, failure=False)
            elif decision.accepted and decision.status == "proposed":
                await self._propose(v, chain, decision, state, job)
            elif decision.accepted:
                await self._verify(v, chain, decision, state, job)
            else:
                await self._reject(v, chain, decision.reasons, decision, failure=True)
            record_decided(state, v.candidate_id)
            await self._save(state, rev)

    async def _verify(self, v: Verdict, chain: Chain, d: Decision, state: KernelState,
                      job: str | None) -> None:
        c = chain.candidate
        assert c is not None  # an accepted chain has its candidate
        points = self.iterations(job, c.id)
        patch = VerifiedPatch(
            source=SOURCE, id=derived_id("verified", c.id), job_id=job, causation_id=v.id, kernel=c.kernel,
            candidate_id=c.id, version=c.version, diff=c.diff, config=dict(c.config), speedup=d.speedup,
            evidence_chain=chain.links,
            report_md=render_md(c, chain.links, d, points),
            report_html=render_html(c, chain.links, d, points))
        if self.signing_key is not None:
            patch = sign(patch, self.signing_key)
        await self.bus.publish(patch_subject("verified", c.kernel), patch)
        record_verified(state, VerifiedEntry(
            candidate_id=c.id, patch_id=patch.id, version=c.version, job_id=job, status=d.status,
            speedup=d.speedup.value,
            speedup_low=d.speedup.low if d.speedup.low is not None else d.speedup.value,
            ts=patch.ts, config=dict(c.config)))
        self.log.info("verified patch", kernel=c.kernel, candidate_id=c.id, status=d.status)

    async def _propose(self, v: Verdict, chain: Chain, d: Decision, state: KernelState,
                       job: str | None) -> None:
        """Correct but not measured on the target device: `patches.proposed.<kernel>`, never verified."""
        c = chain.candidate
        assert c is not None  # an accepted chain has its candidate
        points = self.iterations(job, c.id)
        patch = ProposedPatch(
            source=SOURCE, id=derived_id("proposed", c.id), job_id=job, causation_id=v.id, kernel=c.kernel,
            candidate_id=c.id, version=c.version, diff=c.diff, config=dict(c.config), speedup=d.speedup,
            not_verified=d.not_verified, evidence_chain=chain.links,
            report_md=render_md(c, chain.links, d, points),
            report_html=render_html(c, chain.links, d, points))
        await self.bus.publish(patch_subject("proposed", c.kernel), patch)
        record_proposed(state, job, c.id)
        self.log.info("proposed patch", kernel=c.kernel, candidate_id=c.id, why=d.not_verified)

    async def _reject(self, v: Verdict, chain: Chain, reasons: list[str], d: Decision, *,
                      failure: bool) -> None:
        c = chain.candidate
        await self.bus.publish(patch_subject("rejected", v.kernel), RejectedPatch(
            source=SOURCE, id=derived_id("rejected", v.candidate_id), job_id=v.job_id, causation_id=v.id,
            kernel=v.kernel, candidate_id=v.candidate_id, reasons=reasons))
        if failure:
            features = {k: x for k, x in (("speedup", d.speedup.value), ("speedup_low", d.speedup.low),
                                          ("max_speedup", d.roofline.max_speedup)) if x is not None}
            await self.bus.publish(failure_subject(v.kernel), FailureRecord(
                source=SOURCE, id=derived_id("failure", v.candidate_id), job_id=v.job_id, causation_id=v.id,
                candidate_id=v.candidate_id, kernel=v.kernel, layer=d.layer, reason="; ".join(reasons),
                pattern_ids=pattern_ids(c) if c else [],
                edit_kinds=[ch.change for ch in c.changes] if c else [],
                features=features))
        self.log.info("rejected", kernel=v.kernel, candidate_id=v.candidate_id, reasons=reasons)

    def iterations(self, job_id: str | None, current: str) -> list[IterationPoint]:
        """Speedup of every candidate of the job so far (its full verdict), for the report's plot."""
        points = []
        for c in sorted(self.index.candidates_of_job(job_id), key=lambda c: (c.version, c.ts)):
            full = [x for x in self.index.verdicts_for(c.id) if x.layer == "full"]
            m = next((m for x in full[-1:] for m in x.measurements if m.name == SPEEDUP), None)
            points.append(IterationPoint(version=c.version, candidate_id=c.id, speedup=m,
                                         current=c.id == current))
        return points

    # ------------------------------------------------------------ telemetry roots

    async def _index_telemetry(self, e: StateChangeEvent) -> None:
        """Index the state vector that caused `e` and the device sample that caused the vector, so a
        patch walks back to the telemetry sample that started it. They are fetched from the TELEMETRY
        stream by subject (the critic does not consume every vector: one per GPU per period)."""
        node, gpu = token(e.node), token(e.gpu)
        vector = await self._fetch(telemetry_subject(node, gpu), e.causation_id)
        if vector is not None:
            self.index.add(vector)
            sample = await self._fetch(sample_subject(e.node, e.gpu), vector.causation_id)
            if sample is not None:
                self.index.add(sample)

    async def _fetch(self, subject: str, msg_id: str | None) -> Message | None:
        if msg_id is None or msg_id in self.index:
            return None
        try:
            last = await self.bus.js.get_last_msg("TELEMETRY", subject)
        except Exception:  # noqa: BLE001 - not stored (expired, other stream): the chain says unresolved
            return None
        seq, hops = last.seq, 0
        # The cause is published just before its effect, so it is the last message on its subject or a
        # few before it; look back at most FETCH_HOPS messages of that subject.
        start = max(1, last.seq - FETCH_LOOKBACK)
        raw = last
        while hops < FETCH_HOPS:
            try:
                msg = decode(raw.data or b"")
            except (msgspec.DecodeError, msgspec.ValidationError):
                msg = None
            if msg is not None and msg.id == msg_id:
                return msg
            hops += 1
            seq = start if hops == 1 else raw.seq + 1
            if seq > last.seq:
                return None
            try:
                raw = await self.bus.js.get_msg("TELEMETRY", seq, subject=subject, next=True)
            except Exception:  # noqa: BLE001
                return None
        return None

    # ------------------------------------------------------------ regressions

    async def on_event(self, e: StateChangeEvent) -> None:
        self.index.add(e)
        await self._index_telemetry(e)
        for kernel in {k.kernel for k in e.hot_kernels}:
            async with self._lock:
                state, rev = await self._load(kernel)
                reason, why_not = judge(e, state)
                target = rollback_target(state) if reason else None
                if target is None:
                    if record_sighting(e, state):  # the version's first figures: what a rise is judged by
                        await self._save(state, rev)
                    if e.edge == "start" and e.event in ROLLBACK_EVENTS and entry(state, state.current):
                        self.log.info("no rollback", kernel=kernel, event=e.id, why=why_not)
                    continue
                cur, prev = target
                await self.bus.publish(patch_subject("rollback", kernel), Rollback(
                    source=SOURCE, id=derived_id("rollback", f"{cur.candidate_id}:{e.id}"), job_id=cur.job_id,
                    causation_id=e.id, kernel=kernel, from_candidate_id=cur.candidate_id,
                    to_candidate_id=prev.candidate_id if prev else None, reason=reason or ""))
                record_rollback(state, e.id)
                await self._save(state, rev)
                self.log.info("rolled back", kernel=kernel, to=prev.candidate_id if prev else "original")

    # ------------------------------------------------------------ the kernels bucket

    async def kv(self) -> KeyValue:
        if self._kv is None:
            self._kv = await self.bus.js.key_value(KV_BUCKET)
        return self._kv

    async def _load(self, kernel: str) -> tuple[KernelState, int | None]:
        kv = await self.kv()
        try:
            got = await kv.get(state_key(kernel))
        except nats.js.errors.KeyNotFoundError:
            return KernelState(kernel=kernel), None
        if got.value is None:
            return KernelState(kernel=kernel), got.revision
        return msgspec.json.decode(got.value, type=KernelState), got.revision

    async def _save(self, state: KernelState, revision: int | None) -> None:
        """Compare-and-set: a concurrent writer makes this raise, and the bus redelivers the message."""
        kv, data = await self.kv(), msgspec.json.encode(state)
        if revision is None:
            await kv.create(state_key(state.kernel), data)
        else:
            await kv.update(state_key(state.kernel), data, last=revision)

    async def state(self, kernel: str) -> KernelState:
        return (await self._load(kernel))[0]

    async def _bounds(self, kernel: str) -> TaskBounds | None:
        """The task's formulas and policies, from a manifest registered as `task.<kernel>`, if any."""
        try:
            got = await (await self.kv()).get(f"task.{token(kernel)}")
        except nats.js.errors.KeyNotFoundError:
            return None
        if not got.value:
            return None
        try:
            m = msgspec.json.decode(got.value, type=TaskManifest)
        except (msgspec.DecodeError, msgspec.ValidationError) as err:
            self.log.warning("unreadable task manifest in kernels bucket", kernel=kernel, error=str(err))
            return None
        full = next((c for c in m.costs if c.shape_name == "full"), None)
        return TaskBounds(flops=full.flops if full else None, bytes_moved=full.bytes_moved if full else None,
                          precision=m.precision, dtype=m.dtype, source=f"task manifest {m.path}")
