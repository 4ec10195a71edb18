"""nats-server SIGKILLed mid-job and restarted on the same port and JetStream store: the stack heals.

A real stack (`kpilot up`: nats-server with file storage under tmp, the six services as processes) gets
an optimize request for examples/vector_add.py. Once its first candidate is on the stream the server is
killed with SIGKILL (no lame duck, no flush) and the stack's supervisor starts a new one on the same port
and store dir.
Then: every service answers health again (nats-py reconnects without limit, shared/bus.py), the job
reaches a final status in the `jobs` KV bucket, every candidate has a terminal verdict, no message id is
stored twice (Nats-Msg-Id de-dup), and the critic publishes a proposed or rejected patch (no GPU: never a
verified one).
On this 2-core machine the job (3 candidates, static + interpreter checks) takes ~50 s unkilled, this
test 60-100 s. It caught two ways a restart lost work, both fixed: a tool reply written while the server
was down was dropped and the verifier waited out its 900 s timeout (Bus.request now resends after a
reconnect), and a candidate publish that timed out left the job waiting for candidates nobody had (the
planner's tick now republishes them). Either shows as a job that never gets its verdicts.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import msgspec
import nats.errors
import nats.js.errors
import pytest

from services.kpilot.stack import StackState, state_file, wait_healthy
from services.planner import jobs
from shared.bus import Bus
from shared.ids import new_id
from shared.messages import JOB_ENDED, Candidate, Message, OptimizeRequest, Verdict, decode
from shared.natsserver import free_port, port_open
from shared.subjects import OPTIMIZE_REQUEST, SERVICE_NAMES

ROOT = Path(__file__).resolve().parents[2]
TERMINAL = JOB_ENDED


def _kpilot(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.kpilot", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, check=False)


async def _stored(bus: Bus, stream: str) -> list[tuple[str, Message]]:
    """Every message `stream` holds, in stream order, read by sequence number (streams here are small)."""
    info = await bus.js.stream_info(stream)
    got: list[tuple[str, Message]] = []
    if not info.state.messages:  # an empty stream has first_seq 0, which get_msg refuses
        return got
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            raw = await bus.js.get_msg(stream, seq)
        except nats.js.errors.NotFoundError:  # a gap (deleted message) in the sequence
            continue
        got.append((raw.subject or "", decode(raw.data or b"")))
    return got


async def _wait_job(bus: Bus, job_id: str, timeout_s: float) -> jobs.JobState | None:
    kv = await bus.js.key_value("jobs")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        await asyncio.sleep(1.0)
        try:
            entry = await kv.get(job_id)
        except nats.errors.Error:  # not written yet (KeyNotFoundError), or a request timed out
            continue
        state = jobs.decode_state(entry.value or b"")
        if state.status in TERMINAL:
            return state
    return None


async def _patches(bus: Bus, job_id: str, cand_ids: set[str], timeout_s: float) -> list[tuple[str, Message]]:
    """The job's patch decisions once the critic decided on every candidate (it waits out a 10 s grace
    for the last one), or what is there at `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = [(s, m) for s, m in await _stored(bus, "PATCHES") if m.job_id == job_id]
        if {getattr(m, "candidate_id", "") for _, m in got} >= cand_ids or time.monotonic() > deadline:
            return got
        await asyncio.sleep(1.0)


async def _final_verdicts(bus: Bus, job_id: str, cand_ids: set[str], timeout_s: float) -> list[Verdict]:
    """The job's verdicts once every candidate has its last one (a fail, the full layer, or withdrawn)."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = [m for _, m in await _stored(bus, "VERDICTS") if isinstance(m, Verdict) and m.job_id == job_id]
        final = {v.candidate_id for v in got if v.status in ("fail", "withdrawn") or v.layer == "full"}
        if final >= cand_ids or time.monotonic() > deadline:
            return got
        await asyncio.sleep(1.0)


def _restart_nats(state_dir: Path, port: int) -> int:
    """SIGKILL the stack's nats-server and wait for the stack's supervisor to start a new one on the same
    port and store dir (services/kpilot/supervisor.py); the new server's pid."""
    path = state_file(state_dir, port)
    st = msgspec.json.decode(path.read_bytes(), type=StackState)
    os.kill(st.nats_pid, signal.SIGKILL)
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        now = msgspec.json.decode(path.read_bytes(), type=StackState)
        if now.nats_pid != st.nats_pid and port_open("127.0.0.1", port):
            return now.nats_pid
        time.sleep(0.05)
    raise AssertionError("the supervisor did not restart nats-server within 30 s")


@pytest.mark.slow
async def test_a_killed_nats_server_restarted_mid_job_loses_nothing(tmp_path: Path) -> None:
    port, state_dir = free_port(), tmp_path / "state"
    up = await asyncio.to_thread(_kpilot, "up", "--detach", "--port", str(port), "--state-dir",
                                 str(state_dir), timeout=200)
    assert up.returncode == 0, up.stdout + up.stderr
    url = f"nats://127.0.0.1:{port}"
    try:
        bus = await Bus.connect(url, "kpilot")
        first = asyncio.Event()
        before: list[str] = []  # candidate ids seen live before the kill

        async def on_candidate(raw) -> None:  # type: ignore[no-untyped-def]
            msg = decode(raw.data)
            if isinstance(msg, Candidate) and msg.job_id == req.job_id and not first.is_set():
                before.append(msg.id)
                first.set()

        req = OptimizeRequest(source="kpilot", task_path=str(ROOT / "examples/vector_add.py"), budget_s=150.0,
                              gpu_budget_s=60.0, max_candidates=3, policy="rules", job_id=f"job-{new_id()}")
        sub = await bus.nc.subscribe("candidates.>", cb=on_candidate)
        await bus.nc.flush()
        await bus.publish(OPTIMIZE_REQUEST, req)
        await asyncio.wait_for(first.wait(), 60)
        await sub.unsubscribe()
        old_pid = msgspec.json.decode(state_file(state_dir, port).read_bytes(), type=StackState).nats_pid
        new_pid = await asyncio.to_thread(_restart_nats, state_dir, port)
        assert new_pid != old_pid

        healthy = await wait_healthy(url, SERVICE_NAMES, 30.0)  # a fresh client: the server is back
        assert set(healthy) == set(SERVICE_NAMES), f"not reconnected: {set(SERVICE_NAMES) - set(healthy)}"
        assert bus.nc.is_connected  # our own client reconnected too
        final = await _wait_job(bus, req.job_id, 150.0)
        assert final is not None, f"job {req.job_id} did not finish; logs in {state_dir / 'logs'}"

        candidates = [m for _, m in await _stored(bus, "CANDIDATES") if m.job_id == req.job_id]
        # A candidate still queued when the job's budget ran out is withdrawn (one `withdrawn` verdict, no
        # patch); every other one gets the critic's decision.
        verdicts = await _final_verdicts(bus, req.job_id, {c.id for c in candidates}, 300.0)
        withdrawn = {v.candidate_id for v in verdicts if v.status == "withdrawn"}
        patches = await _patches(bus, req.job_id, {c.id for c in candidates} - withdrawn, 240.0)
        everything = [m for name in ("JOBS", "CANDIDATES", "VERDICTS", "PATCHES")
                      for _, m in await _stored(bus, name)]
        dead = await _stored(bus, "DLQ")
        await bus.close()
    finally:
        await asyncio.to_thread(_kpilot, "down", "--port", str(port), "--state-dir", str(state_dir),
                                timeout=60)

    assert final.status != "failed", final
    assert not dead, f"dead letters after the restart: {dead}"
    ids = Counter(m.id for m in everything)
    assert not [i for i, n in ids.items() if n > 1], "a message id is stored twice"
    cand_ids = {c.id for c in candidates}
    assert set(before) <= cand_ids, "a candidate published before the kill is gone from the stream"
    assert len(cand_ids) == len(final.candidates) >= 1
    for cid in cand_ids - withdrawn:  # each candidate ran the funnel to its end: a fail, or the full layer
        layers = [v.layer for v in verdicts if v.candidate_id == cid]
        assert "static" in layers and ("full" in layers or any(
            v.status == "fail" for v in verdicts if v.candidate_id == cid)), (cid, layers)
    per_layer = Counter((v.candidate_id, v.layer) for v in verdicts)
    assert max(per_layer.values()) == 1, f"a layer verdict was published twice: {per_layer}"
    # No GPU here: a correct candidate is proposed (never verified), a wrong one rejected.
    assert any(s.startswith(("patches.proposed.", "patches.rejected.")) for s, _ in patches), patches
    assert not any(s.startswith("patches.verified.") for s, _ in patches), patches
    assert {m.candidate_id for _, m in patches} <= cand_ids - withdrawn  # type: ignore[attr-defined]
