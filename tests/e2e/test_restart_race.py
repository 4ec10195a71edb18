"""Issue 17's restart race on a real stack: candidates queued, the stack restarted, the toolrunner up late.

`kpilot up` (the supervisor, nats-server with file storage, every service but the toolrunner) gets an
optimize request for examples/vector_add.py; the planner (which needs no toolrunner) publishes its
candidates and the verifier, with no toolrunner up, takes none (its status says `waiting_for`). The stack
is then stopped and started again, still without a toolrunner; once the restarted verifier reports that
it waits, a toolrunner is started by hand (as on another machine). Then each queued candidate gets its
verdicts, and no verdict, rejection or failure record carries an infrastructure reason (before the fix,
20 of 20 failed with "no runner on the bus serves load_task (no GPU runner is up)"). The test waits for
the verdict and patch events; it never sleeps to prove an absence.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import pytest

from services.kpilot.observe import status
from services.kpilot.stack import down, service_command, up
from shared.bus import Bus
from shared.ids import new_id
from shared.messages import Candidate, FailureRecord, Message, OptimizeRequest, RejectedPatch, Verdict
from shared.natsserver import EmbeddedServer, free_port
from shared.subjects import OPTIMIZE_REQUEST, SERVICE_NAMES
from tests.e2e.test_nats_restart import ROOT, _stored

INFRA = ("toolrunner", "no runner", "no responder", "GPU runner", "gave no reply", "took the request")
WITHOUT_RUNNER = tuple(n for n in SERVICE_NAMES if n != "toolrunner")


async def _until(what: str, check, timeout_s: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.5)


async def _verifier_waits(url: str) -> bool:
    rows = await status(url)
    return any(r["name"] == "verifier" and r["details"].get("waiting_for") == "toolrunner" for r in rows)


@pytest.mark.slow
async def test_queued_candidates_survive_a_restart_with_a_late_toolrunner(tmp_path: Path) -> None:
    port, state = free_port(), tmp_path / "state"
    url = f"nats://127.0.0.1:{port}"
    runner: subprocess.Popen[bytes] | None = None
    assert await asyncio.to_thread(up, state, port, detach=True, timeout_s=150, services=WITHOUT_RUNNER) == 0
    try:
        bus = await Bus.connect(url, "kpilot")
        req = OptimizeRequest(source="kpilot", task_path=str(ROOT / "examples/vector_add.py"), budget_s=600.0,
                              gpu_budget_s=60.0, max_candidates=2, policy="rules", job_id=f"job-{new_id()}")
        await bus.publish(OPTIMIZE_REQUEST, req)

        async def queued() -> list[Message]:
            return [m for _, m in await _stored(bus, "CANDIDATES") if m.job_id == req.job_id]

        await _until("the planner's candidates", lambda: _some(queued), 120)
        await _until("the verifier to wait for a toolrunner", lambda: _verifier_waits(url), 60)
        await bus.close()

        assert await asyncio.to_thread(down, state, port) == 0  # `make down` ...
        assert await asyncio.to_thread(up, state, port, detach=True, timeout_s=150, services=WITHOUT_RUNNER) == 0
        await _until("the restarted verifier to wait", lambda: _verifier_waits(url), 60)
        runner = _start_runner(state, port)  # ... and the toolrunner late, as on another machine

        bus = await Bus.connect(url, "kpilot")
        cands = [c for c in await queued() if isinstance(c, Candidate)]
        assert cands

        async def decided() -> bool:
            verdicts = [m for _, m in await _stored(bus, "VERDICTS") if isinstance(m, Verdict)]
            done = {v.candidate_id for v in verdicts if v.layer == "full" or v.status == "fail"}
            return {c.id for c in cands} <= done

        try:  # ~60-90 s per candidate on this loaded 2-core machine
            await _until("a final verdict for every queued candidate", decided, 600)
        except AssertionError as e:
            logs = state / "logs"
            tails = {p.name: p.read_text()[-1500:] for p in logs.glob("*.log") if p.name.startswith(("verifier",
                                                                                                    "toolrunner"))}
            raise AssertionError(f"{e}; logs: {tails}") from None
        verdicts = [m for _, m in await _stored(bus, "VERDICTS") if isinstance(m, Verdict)]
        outcomes = [m for _, m in await _stored(bus, "PATCHES") + await _stored(bus, "FAILURES")
                    if isinstance(m, RejectedPatch | FailureRecord)]
        dead = await _stored(bus, "DLQ")
        await bus.close()
    finally:
        if runner is not None:
            runner.terminate()
            runner.wait(30)
        await asyncio.to_thread(down, state, port)

    infra = [(v.candidate_id, v.layer, r) for v in verdicts for r in v.reasons if any(w in r for w in INFRA)]
    assert not infra, infra
    bad = [m for m in outcomes if any(w in str(m) for w in INFRA)]
    assert not bad, bad
    assert not dead, dead
    assert all(v.status != "fail" for v in verdicts if v.candidate_id in {c.id for c in cands}), [
        (v.layer, v.reasons) for v in verdicts if v.status == "fail"]


def _start_runner(state: Path, port: int) -> subprocess.Popen[bytes]:
    argv, env = service_command(EmbeddedServer(state, port=port), "toolrunner", state, None)
    with open(state / "logs" / f"toolrunner-late-{port}.log", "ab") as log:
        return subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=log, env=env)


async def _some(get) -> bool:  # type: ignore[no-untyped-def]
    return bool(await get())
