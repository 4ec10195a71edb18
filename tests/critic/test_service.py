"""The critic adapter against a real nats-server: verified patch, rejection, rollback, restart."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import nats.errors
import nats.js.errors
from nats.js.api import AckPolicy, ConsumerConfig

from services.critic.service import setup
from services.critic.state import KernelState, state_key
from shared.bus import Bus
from shared.messages import (
    Candidate,
    FailureRecord,
    KernelShare,
    Measurement,
    Message,
    ProposedPatch,
    RejectedPatch,
    Rollback,
    Verdict,
    VerifiedPatch,
    decode,
)
from shared.natsserver import EmbeddedServer
from shared.service import ServiceRuntime
from shared.subjects import candidate_subject, job_subject, state_event_subject, verdict_subject
from tests.conftest import BusFactory

from .chains import MATMUL_BYTES, MATMUL_FLOPS, job, matmul_ms, tc_event

ROOT = Path(__file__).resolve().parents[2]


async def start_critic(make_bus: BusFactory, grace_s: float = 2.0) -> Bus:
    bus = await make_bus("critic")
    # Bus.close drains; a pull subscription whose fetch was cancelled can hold a late status message
    # nobody reads, and the drain then waits out nats-py's 30 s default (reported to the lead).
    bus.nc.options["drain_timeout"] = 1
    await setup(ServiceRuntime("critic", bus), grace_s=grace_s)
    return bus


async def publish(make_bus: BusFactory, msgs: list[Message]) -> None:
    """Each message from the service allowed to publish it, on its subject."""
    buses = {s: await make_bus(s) for s in ("telemetry", "planner", "verifier")}
    for m in msgs:
        if isinstance(m, Verdict):
            await buses["verifier"].publish(verdict_subject(m.layer, m.kernel), m)
        elif m.source == "telemetry":
            await buses["telemetry"].publish(state_event_subject(m.event, "node0", "0"), m)  # type: ignore
        elif isinstance(m, Candidate):
            await buses["planner"].publish(candidate_subject(m.kernel), m)
        else:
            await buses["planner"].publish(job_subject(m.job_id or "none"), m)


async def stream(bus: Bus, subject: str) -> list[Message]:
    """Everything the stream holds on `subject`, read with a throw-away consumer."""
    cfg = ConsumerConfig(ack_policy=AckPolicy.NONE, inactive_threshold=5.0)
    sub = await bus.js.pull_subscribe(subject, config=cfg)
    out: list[Message] = []
    pending = (await sub.consumer_info()).num_pending
    while len(out) < pending:
        try:
            out += [decode(m.data) for m in await sub.fetch(100, timeout=1.0)]
        except nats.errors.TimeoutError:
            break
    await sub.unsubscribe()
    return out


async def wait_for(bus: Bus, subject: str, n: int = 1, timeout_s: float = 20.0) -> list[Message]:
    deadline = time.monotonic() + timeout_s
    while True:
        got = await stream(bus, subject)
        if len(got) >= n or time.monotonic() > deadline:
            return got
        await asyncio.sleep(0.2)


async def kernel_state(bus: Bus, kernel: str) -> KernelState:
    entry = await (await bus.js.key_value("kernels")).get(state_key(kernel))
    return msgspec.json.decode(entry.value, type=KernelState)


async def test_a_verdict_chain_becomes_one_verified_patch_with_its_whole_evidence_chain(
        make_bus: BusFactory) -> None:
    j = job()
    await start_critic(make_bus)
    await publish(make_bus, j.messages)
    op = await make_bus("operator")
    [patch] = await wait_for(op, "patches.verified.>")
    assert isinstance(patch, VerifiedPatch)
    assert patch.candidate_id == j.candidate.id and patch.diff == j.candidate.diff
    assert patch.config == j.candidate.config and patch.causation_id == j.verdicts[-1].id
    published = {m.id for m in j.messages}
    assert next(link.step for link in patch.evidence_chain) == "trigger"
    assert [link.step for link in patch.evidence_chain][-3:] == ["verdict:static", "verdict:micro",
                                                                  "verdict:full"]
    assert all(link.message_id in published for link in patch.evidence_chain)
    assert patch.speedup is not None and patch.speedup.value == j.verdicts[-1].measurements[0].value
    assert "<svg" in patch.report_html and "## Evidence chain" in patch.report_md
    state = await kernel_state(op, "matmul_kernel")
    assert state.current == j.candidate.id and state.decided == [j.candidate.id]


async def test_a_chain_without_gpu_timing_becomes_a_proposed_patch_and_nothing_verified(
        make_bus: BusFactory) -> None:
    j = job(full="skipped")  # what the verifier publishes on a CPU machine
    await start_critic(make_bus)
    await publish(make_bus, j.messages)
    op = await make_bus("operator")
    [patch] = await wait_for(op, "patches.proposed.>")  # the event that would show a verified patch too
    assert isinstance(patch, ProposedPatch) and patch.candidate_id == j.candidate.id
    assert patch.not_verified == "speedup not measured: no GPU" and patch.diff == j.candidate.diff
    assert patch.report_md.startswith("# Proposed patch (not verified)")
    assert await stream(op, "patches.verified.>") == [] and await stream(op, "failures.>") == []
    state = await kernel_state(op, "matmul_kernel")
    assert state.current is None and state.history == [] and state.decided == [j.candidate.id]


async def test_a_chain_the_roofline_contradicts_is_rejected_with_a_failure_record(
        make_bus: BusFactory) -> None:
    j = job(speedup=(matmul_ms("tri_mm_32_32_32_1_4_1"), 1.0))  # 1100 TFLOP/s: beyond 784
    j.verdicts[-1].measurements += [Measurement(name="flops", value=MATMUL_FLOPS, unit="flop"),
                                    Measurement(name="bytes_moved", value=MATMUL_BYTES, unit="byte")]
    await start_critic(make_bus)
    await publish(make_bus, j.messages)
    op = await make_bus("operator")
    [rejected] = await wait_for(op, "patches.rejected.matmul_kernel")
    assert isinstance(rejected, RejectedPatch) and rejected.candidate_id == j.candidate.id
    assert any(r.startswith("beyond the roofline") for r in rejected.reasons)
    [failure] = await wait_for(op, "failures.matmul_kernel")
    assert isinstance(failure, FailureRecord) and failure.layer == "full"
    assert failure.edit_kinds == ["set_constexpr", "set_num_stages"]
    assert failure.pattern_ids == ["tensor_core_tile_small", "k_loop_not_pipelined"]
    assert await stream(op, "patches.verified.>") == []


async def test_a_regression_rolls_back_to_the_previous_verified_version(make_bus: BusFactory) -> None:
    first = job()
    second = job(version=2, parent=first,
                 speedup=(matmul_ms("tri_mm_32_32_32_1_4_1"), matmul_ms("tri_mm_128_256_64_8_8_4")))
    await start_critic(make_bus)
    await publish(make_bus, first.messages + second.messages[1:])
    op = await make_bus("operator")
    patches = await wait_for(op, "patches.verified.>", n=2)
    assert [p.candidate_id for p in patches] == [first.candidate.id, second.candidate.id]  # type: ignore
    report = patches[1].report_md  # type: ignore[attr-defined]
    assert f"| v1 | `{first.candidate.id}` | 6.14x (95% CI 6.13-6.14) |" in report
    assert f"| v2 (this) | `{second.candidate.id}`" in report
    regression = tc_event(event="regression", ts=time.time() + 1)
    await publish(make_bus, [regression, regression])  # the repeat is de-duplicated by id
    [rb] = await wait_for(op, "patches.rollback.>")
    assert isinstance(rb, Rollback) and rb.causation_id == regression.id
    assert (rb.from_candidate_id, rb.to_candidate_id) == (second.candidate.id, first.candidate.id)
    assert (await kernel_state(op, "matmul_kernel")).current == first.candidate.id
    sighting = tc_event(ts=time.time() + 2)  # v1's first figures in telemetry: what a rise is judged by
    again = tc_event(event="anomaly", ts=time.time() + 3, mean_us=12360.0 * 1.5)
    await publish(make_bus, [sighting, again])
    rbs = await wait_for(op, "patches.rollback.>", n=2)
    last = rbs[1]
    assert isinstance(last, Rollback)
    assert (last.from_candidate_id, last.to_candidate_id) == (first.candidate.id, None)


async def test_a_demo_rerun_or_another_kernels_episode_does_not_roll_the_patch_back(
        make_bus: BusFactory) -> None:
    j = job()
    await start_critic(make_bus)
    await publish(make_bus, j.messages)
    op = await make_bus("operator")
    [patch] = await wait_for(op, "patches.verified.>")
    untuned = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "num_stages": 1}  # what a re-run's workload runs
    assert any(j.candidate.config.get(k) != v for k, v in untuned.items())
    rerun = tc_event(event="regression", ts=time.time() + 1, config=untuned)
    copy = KernelShare(kernel="copy_kernel", share=0.79, launches=900, mean_us=310.0)
    other = tc_event(event="bandwidth_low", ts=time.time() + 2, share=0.21, others=[copy])
    genuine = tc_event(event="regression", ts=time.time() + 3, config=dict(j.candidate.config))
    await publish(make_bus, [rerun, other, genuine])  # one consumer: handled in this order
    [rb] = await wait_for(op, "patches.rollback.>")
    assert isinstance(rb, Rollback) and rb.causation_id == genuine.id, rb
    assert rb.from_candidate_id == patch.candidate_id  # type: ignore[attr-defined]


async def test_a_restarted_critic_replaying_every_verdict_publishes_the_patch_once(
        make_bus: BusFactory) -> None:
    j = job()
    critic = await start_critic(make_bus)
    await publish(make_bus, j.messages)
    op = await make_bus("operator")
    assert len(await wait_for(op, "patches.verified.>")) == 1
    await critic.close()
    # Forget where the consumer was: the new critic is delivered every verdict again (only admin may).
    admin = await make_bus("admin")
    await admin.js.delete_consumer("VERDICTS", "critic-verdicts")
    critic = await start_critic(make_bus)
    await asyncio.sleep(3.0)
    assert len(await stream(op, "patches.verified.>")) == 1
    assert (await kernel_state(op, "matmul_kernel")).decided == [j.candidate.id]
    await critic.close()
    # A kill between publish and the KV write: the state is lost too, the stream's de-dup still holds.
    await (await admin.js.key_value("kernels")).delete(state_key("matmul_kernel"))
    await admin.js.delete_consumer("VERDICTS", "critic-verdicts")
    critic = await start_critic(make_bus)
    await asyncio.sleep(3.0)
    assert len(await stream(op, "patches.verified.>")) == 1
    await critic.close()


def _spawn(server: EmbeddedServer) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "services.critic", "--nats", server.plain_url(),
                             "--creds-file", str(server.creds_file("critic")), "--log-level", "warning"],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


async def _acked(op: Bus, durable: str, n: int, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            info = await op.js.consumer_info("VERDICTS", durable)
            if info.ack_floor.stream_seq >= n and info.num_ack_pending == 0:
                return
        except nats.js.errors.NotFoundError:  # the new critic has not created it yet
            pass
        await asyncio.sleep(0.2)
    raise AssertionError(f"critic did not ack {n} verdicts in {timeout_s} s")


async def test_a_critic_killed_mid_job_resumes_and_publishes_the_patch_once(
        make_bus: BusFactory, nats_server: EmbeddedServer) -> None:
    j = job()
    op = await make_bus("operator")
    proc = _spawn(nats_server)
    try:
        await publish(make_bus, j.messages[:-1])  # trigger .. micro verdict
        await _acked(op, "critic-verdicts", 2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        await publish(make_bus, j.messages[-1:])  # the full verdict, while no critic runs
        proc = _spawn(nats_server)
        [patch] = await wait_for(op, "patches.verified.>")
        assert isinstance(patch, VerifiedPatch) and not any("resolve" in link.summary
                                                            for link in patch.evidence_chain)
        assert len(patch.evidence_chain) == 8
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        await (await make_bus("admin")).js.delete_consumer("VERDICTS", "critic-verdicts")
        proc = _spawn(nats_server)
        await _acked(op, "critic-verdicts", 3)
        assert len(await stream(op, "patches.verified.>")) == 1
    finally:
        proc.kill()
        proc.wait(10)
