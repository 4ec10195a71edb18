"""Clustered JetStream (`kpilot up --cluster 3`): one server SIGKILLed mid-job, the leader of the
CANDIDATES stream, and the job still finishes with nothing lost and nothing stored twice; and the same
for a rolling restart of all three servers mid-job.

A real stack: three nats-servers with routes, every stream at three replicas, the six services as
processes given the whole server list. Once the job's first candidate is on the stream the server that
leads CANDIDATES is killed with SIGKILL and not restarted: the two left keep quorum, elect new leaders,
the clients connected to the dead one reconnect to another, and the job reaches a final status with one
patch decision per candidate (0 lost, 0 duplicate) and no message id stored twice.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import nats.errors
import pytest

from services.kpilot.stack import wait_healthy
from shared.bus import Bus
from shared.ids import new_id
from shared.messages import Candidate, OptimizeRequest, Verdict, decode
from shared.natscluster import restart_member, stream_leaders, stream_names
from shared.natsserver import Credentials, free_port
from shared.subjects import OPTIMIZE_REQUEST, SERVICE_NAMES
from tests.e2e.test_nats_restart import ROOT, _kpilot, _patches, _stored, _wait_job

T = TypeVar("T")


def _status(url: str, state_dir: Path) -> list[dict]:  # type: ignore[type-arg]
    out = _kpilot("status", "--json", "--nats", url, "--state-dir", str(state_dir), timeout=60)
    return json.loads(out.stdout)


async def _job_through(tmp_path: Path, disrupt) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """Run one job on a fresh 3-server cluster, call `disrupt(state_dir, port, servers, leader)` once the
    job's first candidate is stored, and collect what the streams hold after the job."""
    port, state_dir = free_port(), tmp_path / "state"
    while any(_busy(p) for p in (port + 1, port + 2)):
        port = free_port()
    up = await asyncio.to_thread(_kpilot, "up", "--detach", "--cluster", "3", "--port", str(port),
                                 "--state-dir", str(state_dir), timeout=200)
    assert up.returncode == 0, up.stdout + up.stderr
    creds = Credentials.load_or_create(state_dir)
    url = ",".join(creds.url("operator", "127.0.0.1", port + i) for i in range(3))
    try:
        servers = [r for r in await asyncio.to_thread(_status, url, state_dir) if r["kind"] == "nats-server"]
        assert [s["name"] for s in servers] == ["kpilot-1", "kpilot-2", "kpilot-3"]
        assert all(s["up"] and s["pid"] for s in servers)
        led = sorted(n for s in servers for n in s["leader_of"])
        assert led == sorted(stream_names())  # every stream has exactly one leader among the three

        bus = await Bus.connect(url, "kpilot")
        for name in stream_names():
            info = await bus.js.stream_info(name)
            assert info.config.num_replicas == 3, name
            assert info.cluster is not None and len(info.cluster.replicas or []) == 2, name
        first = asyncio.Event()
        req = OptimizeRequest(source="kpilot", task_path=str(ROOT / "examples/vector_add.py"), budget_s=150.0,
                              gpu_budget_s=60.0, max_candidates=1, policy="rules", job_id=f"job-{new_id()}")

        async def on_candidate(raw) -> None:  # type: ignore[no-untyped-def]
            msg = decode(raw.data)
            if isinstance(msg, Candidate) and msg.job_id == req.job_id:
                first.set()

        sub = await bus.nc.subscribe("candidates.>", cb=on_candidate)
        await bus.nc.flush()
        await bus.publish(OPTIMIZE_REQUEST, req)
        await asyncio.wait_for(first.wait(), 90)
        await sub.unsubscribe()
        leader = (await stream_leaders(bus.js))["CANDIDATES"]
        await asyncio.to_thread(disrupt, state_dir, port, servers, leader)

        final = await _settled(lambda: _wait_job(bus, req.job_id, 150.0))
        assert final is not None, f"job {req.job_id} did not finish; logs in {state_dir / 'logs'}"
        # every read of this observer goes through _settled: a stream may still be electing its leader
        candidates = [m for _, m in await _settled(lambda: _stored(bus, "CANDIDATES")) if m.job_id == req.job_id]
        cand_ids = {c.id for c in candidates}
        patches = await _settled(lambda: _patches(bus, req.job_id, cand_ids, 60.0))
        everything = [m for name in ("JOBS", "CANDIDATES", "VERDICTS", "PATCHES")
                      for _, m in await _settled(lambda name=name: _stored(bus, name))]  # type: ignore[misc]
        dead = await _settled(lambda: _stored(bus, "DLQ"))
        new_leaders = await _settled(lambda: stream_leaders(bus.js))
        healthy = await wait_healthy(url, SERVICE_NAMES, 30.0)
        after = [r for r in await asyncio.to_thread(_status, url, state_dir) if r["kind"] == "nats-server"]
        await bus.close()
    finally:
        await asyncio.to_thread(_kpilot, "down", "--port", str(port), "--state-dir", str(state_dir),
                                timeout=60)

    assert final.status != "failed", final
    assert set(healthy) == set(SERVICE_NAMES), f"not reconnected: {set(SERVICE_NAMES) - set(healthy)}"
    assert not dead, f"dead letters after the disruption: {dead}; logs in {state_dir / 'logs'}"
    ids = Counter(m.id for m in everything)
    assert not [i for i, n in ids.items() if n > 1], "a message id is stored twice"
    assert len(cand_ids) == len(final.candidates) >= 1
    decided = Counter(getattr(m, "candidate_id", "") for _, m in patches)
    assert set(decided) == cand_ids, (f"lost patch decisions: {cand_ids - set(decided)}\n"
                                      + _explain(final, everything, state_dir))
    assert max(decided.values()) == 1, f"duplicate patch decisions: {decided}"
    return {"leader": leader, "new_leaders": new_leaders, "servers": servers, "after": after}


@pytest.mark.slow
async def test_killing_the_stream_leader_mid_job_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    def kill_leader(state_dir: Path, port: int, servers: list[dict], leader: str) -> None:  # type: ignore[type-arg]
        os.kill(next(s for s in servers if s["name"] == leader)["pid"], signal.SIGKILL)

    got = await _job_through(tmp_path, kill_leader)
    assert got["new_leaders"]["CANDIDATES"] not in ("", got["leader"]), got["new_leaders"]  # a survivor leads
    assert {s["name"]: s["up"] for s in got["after"]}[got["leader"]] is False


@pytest.mark.slow
async def test_a_rolling_restart_of_all_three_mid_job_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    def rolling(state_dir: Path, port: int, servers: list[dict], leader: str) -> None:  # type: ignore[type-arg]
        for s in servers:  # one at a time, each back and current before the next goes
            assert restart_member(state_dir, port, s["name"]) != s["pid"]

    got = await _job_through(tmp_path, rolling)
    assert all(s["up"] for s in got["after"])
    assert {s["name"]: s["pid"] for s in got["after"]} != {s["name"]: s["pid"] for s in got["servers"]}
    assert sorted(n for s in got["after"] for n in s["leader_of"]) == sorted(stream_names())


async def _settled(wait: Callable[[], Awaitable[T]]) -> T:
    """`wait()`, again while the cluster elects new leaders: a JetStream API request of this observer
    (the KV bucket's info) can time out meanwhile; the services retry their own."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return await wait()
        except nats.errors.TimeoutError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(1.0)


def _explain(final, everything: list, state_dir: Path) -> str:  # type: ignore[no-untyped-def,type-arg]
    """What a failed run needs to be read where only its output survives (CI): the job's end, its
    verdicts, and the services' log lines other than the connection churn the disruption causes."""
    verdicts = [f"{m.candidate_id}:{m.layer}:{m.status}" for m in everything if isinstance(m, Verdict)
                and m.job_id == final.job_id]
    lines = [f"job {final.status}: {final.reasons}", f"verdicts: {verdicts}"]
    noise = ("nats error", "nats disconnected", "nats reconnected")
    for log in sorted((state_dir / "logs").glob("*.log")):
        kept = [ln[:400] for ln in log.read_text(errors="replace").splitlines() if not any(n in ln for n in noise)]
        lines += [f"--- {log.name}", *kept[-12:]]
    return "\n".join(lines)


def _busy(port: int) -> bool:
    from shared.natsserver import port_open
    return port_open("127.0.0.1", port)


def test_an_even_or_too_small_cluster_is_refused_with_the_fix(tmp_path: Path) -> None:
    out = _kpilot("up", "--detach", "--cluster", "2", "--port", str(free_port()), "--state-dir",
                  str(tmp_path), timeout=60)
    assert out.returncode == 2 and "odd size of at least 3" in out.stderr
    assert not list(tmp_path.glob("*.conf"))  # refused before any server was configured
