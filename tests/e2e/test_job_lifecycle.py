"""Jobs end when they end, on a real stack (`kpilot up`: nats-server and the six services as processes).

- A job whose wall budget runs out withdraws its queued candidates: the verifier publishes one `withdrawn`
  verdict for each instead of running the funnel, and the critic publishes no rejection and no failure
  record for them; `kpilot optimize` exits 3 (nothing verified) and printed progress lines.
- Ctrl-C on `kpilot optimize` (stdin not a terminal) says the job id and how to cancel it; `kpilot cancel`
  ends the job (`cancelled`) and its queued candidates are withdrawn. An unknown job id is an error.
On this 2-core machine a vector_add candidate takes ~5 s of static checks and ~30 s of interpreter
correctness, so a 6 s budget ends while the first candidate is still in the funnel.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.messages import FailureRecord, JobUpdate, Message, RejectedPatch, Verdict, decode
from shared.natsserver import free_port

ROOT = Path(__file__).resolve().parents[2]
TASK = str(ROOT / "examples" / "vector_add.py")


def _kpilot(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.kpilot", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port, state = free_port(), str(tmp_path_factory.mktemp("lifecycle") / "state")
    up = _kpilot("up", "--detach", "--port", str(port), "--state-dir", state, timeout=200)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        yield f"nats://127.0.0.1:{port}"
    finally:
        _kpilot("down", "--port", str(port), "--state-dir", state, timeout=60)


def _stored(url: str, subject: str) -> list[Message]:
    """Every message the streams hold on `subject` (`kpilot tail --since` as a user would read them)."""
    tail = _kpilot("tail", subject, "--json", "--since", "1h", "--timeout", "3", "--nats", url, timeout=60)
    return [decode(json.dumps(json.loads(line)["data"]).encode()) for line in tail.stdout.splitlines()]


def _job_finished(url: str, job_id: str, timeout_s: float = 240.0) -> list[Verdict]:
    """Wait until every candidate of the job has its last verdict (failed, full or withdrawn)."""
    deadline = time.monotonic() + timeout_s
    while True:
        cands = [m for m in _stored(url, "candidates.>") if m.job_id == job_id]
        verdicts = [m for m in _stored(url, "verdicts.>") if isinstance(m, Verdict) and m.job_id == job_id]
        final = {v.candidate_id for v in verdicts if v.status in ("fail", "withdrawn") or v.layer == "full"}
        if cands and final >= {c.id for c in cands}:
            return verdicts
        assert time.monotonic() < deadline, f"{len(final)} of {len(cands)} candidates finished"
        time.sleep(2.0)


def _no_outcome_for(url: str, candidate_ids: set[str]) -> None:
    rejected = [m for m in _stored(url, "patches.>") if isinstance(m, RejectedPatch)]
    failures = [m for m in _stored(url, "failures.>") if isinstance(m, FailureRecord)]
    assert not [m for m in rejected + failures if m.candidate_id in candidate_ids], (rejected, failures)


@pytest.mark.slow
def test_a_spent_budget_withdraws_the_queued_candidates_and_optimize_exits_3(stack: str) -> None:
    out = _kpilot("optimize", TASK, "--budget", "6", "--patch-wait", "30", "--nats", stack, timeout=400)
    assert out.returncode == 3, out.stdout + out.stderr
    job_id = re.search(r"job (job-\w+) requested", out.stdout).group(1)  # type: ignore[union-attr]
    assert f"job {job_id}: budget_exhausted" in out.stdout and "v1 queued" in out.stdout
    assert "outcome: nothing verified (exit 3)" in out.stdout
    verdicts = _job_finished(stack, job_id)
    withdrawn = [v for v in verdicts if v.status == "withdrawn"]
    assert withdrawn, [(v.candidate_id, v.layer, v.status) for v in verdicts]
    assert all("withdrawn: job " in v.reasons[0] and "budget_exhausted" in v.reasons[0] for v in withdrawn)
    _no_outcome_for(stack, {v.candidate_id for v in withdrawn})
    funnel = json.loads(_kpilot("funnel", "--json", "--job", job_id, "--nats", stack, timeout=60).stdout)
    assert funnel["overall"]["withdrawn"] == len({v.candidate_id for v in withdrawn})


@pytest.mark.slow
def test_ctrl_c_names_the_job_and_kpilot_cancel_withdraws_its_candidates(stack: str) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "services.kpilot", "optimize", TASK, "--budget", "600",
                             "--nats", stack], cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:  # progress lines as they come: interrupt once a candidate is queued
        lines.append(line)
        if " queued: config " in line:
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, "".join(lines) + err
    job_id = re.search(r"job (job-\w+) goes on", err).group(1)  # type: ignore[union-attr]
    assert f"cancel it with: kpilot cancel {job_id} --nats {stack}" in err

    cancel = _kpilot("cancel", job_id, "--nats", stack, timeout=60)
    assert cancel.returncode == 0 and f"job {job_id} cancelled" in cancel.stdout, cancel.stdout + cancel.stderr
    updates = [m for m in _stored(stack, "jobs.>") if isinstance(m, JobUpdate) and m.job_id == job_id]
    assert updates[-1].status == "cancelled"
    verdicts = _job_finished(stack, job_id)
    withdrawn = [v for v in verdicts if v.status == "withdrawn"]
    assert withdrawn and all("(cancelled: cancelled by the operator)" in v.reasons[0] for v in withdrawn)
    _no_outcome_for(stack, {v.candidate_id for v in withdrawn})
    again = _kpilot("cancel", job_id, "--nats", stack, timeout=60)
    assert again.returncode == 0 and "already ended: cancelled" in again.stdout


def test_cancel_of_an_unknown_job_says_where_job_ids_are(stack: str) -> None:
    out = _kpilot("cancel", "job-nosuchjob", "--nats", stack, timeout=60)
    assert out.returncode == 1 and "no job job-nosuchjob on the bus" in out.stdout
    assert "kpilot tail 'jobs.>'" in out.stdout
