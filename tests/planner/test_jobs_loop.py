"""The job engine and the iteration loop, with the planner's own I/O interface bound to in-memory lists.

The "verifier" here replays the real H200 table (tests/fixtures/h200-probe/matmul_sdpa.json):
listed configs get a full-layer verdict with their measured TFLOP/s, unlisted ones a `skipped` verdict
saying "not measured" (no number is invented). No NATS here: the adapter test uses a real server.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

from services.planner import jobs
from services.planner.loop import Planner
from services.planner.policies.rules import RulesPolicy
from shared.bus import BusError
from shared.messages import Candidate, JobUpdate, Measurement, ToolResult, Verdict

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "h200-probe" / "matmul_sdpa.json"
KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")


class MemoryIO:
    def __init__(self) -> None:
        self.t = 1000.0
        self.candidates: list[Candidate] = []
        self.updates: list[JobUpdate] = []
        self.saved: dict[str, bytes] = {}
        self.analyzed: list[dict] = []

    async def analyze(self, task_path: str, config: dict[str, Any]) -> None:
        self.analyzed.append(config)

    async def call_tool(self, name: str, args: dict[str, Any]) -> ToolResult:
        return ToolResult(source="test", tool=name, tool_version="0", ok=False)

    async def publish_candidate(self, c: Candidate) -> None:
        self.candidates.append(c)

    async def publish_update(self, u: JobUpdate) -> None:
        self.updates.append(u)

    async def save(self, s: jobs.JobState) -> None:
        self.saved[s.job_id] = jobs.encode_state(s)

    def now(self) -> float:
        return self.t


def _table() -> dict[tuple[int, ...], float]:
    raw = json.loads(FIXTURE.read_text())
    return {
        tuple(int(x) for x in k.removeprefix("tri_mm_").split("_")): v["tflops"]
        for k, v in raw.items()
        if k.startswith("tri_mm_")
    }


def _verdicts(c: Candidate, table: dict) -> list[Verdict]:
    cfg = ast.literal_eval(Path(c.candidate_path).read_text().split("\nCONFIG = ", 1)[1].split("\n", 1)[0])
    assert cfg == c.config  # the candidate file is self-contained: its CONFIG is the candidate's config
    env = {"source": "verifier", "candidate_id": c.id, "kernel": c.kernel, **c.caused()}
    out = [Verdict(layer="static", status="pass", **env)]
    tf = table.get(tuple(cfg[k] for k in KEYS))
    if tf is None:
        out.append(
            Verdict(layer="micro", status="skipped", reasons=["perf: not measured (not in table)"], **env)
        )
        out.append(
            Verdict(layer="full", status="skipped", reasons=["perf: not measured (not in table)"], **env)
        )
    else:
        out.append(
            Verdict(
                layer="full",
                status="pass",
                gpu_seconds=2.0,
                measurements=[Measurement(name="tflops", value=tf, unit="TFLOP/s")],
                **env,
            )
        )
    return out


@pytest.fixture
def task(tmp_path: Path) -> Path:
    p = tmp_path / "matmul.py"
    shutil.copy(ROOT / "examples/matmul.py", p)
    return p


async def test_loop_finds_688_and_converges(task: Path, tmp_path: Path) -> None:
    io = MemoryIO()
    planner = Planner(io, {"rules": RulesPolicy()}, tmp_path / "cands")
    s = await planner.trigger(
        kernel="matmul_kernel",
        task_path=str(task),
        trigger_id="req-1",
        budget=jobs.Budget(wall_s=1e9, gpu_s=1e9, candidates=40),
    )
    table = _table()
    done = 0
    while jobs.is_open(s):
        batch = io.candidates[done:]
        assert batch, "an open job with nothing pending must have published a round"
        done = len(io.candidates)
        for c in batch:
            for v in _verdicts(c, table):
                io.t += 1
                await planner.verdict(v)
    assert s.status in ("converged", "done"), s.reasons
    assert s.best_score is not None and s.best_score > 688
    best = s.candidates[s.best_candidate_id].attempt.config
    assert tuple(best[k] for k in KEYS) == (128, 256, 64, 8, 8, 4)
    assert len(io.candidates) <= 40 and len({c.source_sha256 for c in io.candidates}) == len(io.candidates)
    assert io.updates[0].status == "open" and io.updates[-1].status == s.status
    assert io.updates[-1].best_candidate_id == s.best_candidate_id
    # Every candidate's diff is against the task as the job found it.
    assert all(c.diff.startswith("--- a/matmul.py") for c in io.candidates)


async def test_second_trigger_joins_the_open_job(task: Path, tmp_path: Path) -> None:
    io = MemoryIO()
    planner = Planner(io, {"rules": RulesPolicy()}, tmp_path / "cands")
    a = await planner.trigger(kernel="matmul_kernel", task_path=str(task), trigger_id="t1")
    n = len(io.candidates)
    b = await planner.trigger(kernel="matmul_kernel", task_path=str(task), trigger_id="t2")
    assert a.job_id == b.job_id and b.triggers == ["t1", "t2"] and len(io.candidates) == n


async def test_resume_republishes_unpublished_and_ignores_repeated_verdicts(
    task: Path, tmp_path: Path
) -> None:
    io = MemoryIO()
    planner = Planner(io, {"rules": RulesPolicy()}, tmp_path / "cands")
    s = await planner.trigger(kernel="matmul_kernel", task_path=str(task), trigger_id="t1")
    first = list(io.candidates)
    # Simulate a crash after saving but before publishing the last candidate.
    saved = jobs.decode_state(io.saved[s.job_id])
    saved.candidates[first[-1].id].published = False
    io2 = MemoryIO()
    fresh = Planner(io2, {"rules": RulesPolicy()}, tmp_path / "cands")
    await fresh.resume([saved])
    assert [c.id for c in io2.candidates] == [first[-1].id]  # only the unpublished one, same id
    assert msgspec.json.encode(io2.candidates[0]) == msgspec.json.encode(first[-1])
    v = Verdict(
        source="verifier",
        candidate_id=first[0].id,
        kernel="matmul_kernel",
        layer="full",
        status="pass",
        gpu_seconds=3.0,
        measurements=[Measurement(name="tflops", value=100.0)],
    )
    await fresh.verdict(v)
    await fresh.verdict(v)  # redelivery: counted once
    st = fresh.jobs[s.job_id]
    assert st.gpu_seconds == 3.0 and st.candidates[first[0].id].attempt.status == "pass"
    assert len(io2.candidates) == 1  # the round is still pending: nothing new planned


async def test_a_publish_that_failed_mid_round_is_retried_by_the_tick(task: Path, tmp_path: Path) -> None:
    """nats-server restarting: the second candidate's publish times out, the handler fails, and the
    redelivered trigger only joins the job; the next tick publishes what is left, same ids."""

    class FlakyIO(MemoryIO):
        fail_at = 2

        async def publish_candidate(self, c: Candidate) -> None:
            if len(self.candidates) + 1 == self.fail_at:
                self.fail_at = 0
                raise BusError("publish to 'candidates.matmul_kernel' not acknowledged within 5.0 s")
            await super().publish_candidate(c)

    io = FlakyIO()
    planner = Planner(io, {"rules": RulesPolicy()}, tmp_path / "cands")
    with pytest.raises(BusError):
        await planner.trigger(kernel="matmul_kernel", task_path=str(task), trigger_id="t1", job_id="job-x")
    s = planner.jobs["job-x"]
    assert len(io.candidates) == 1 < len(s.candidates)
    await planner.trigger(kernel="matmul_kernel", task_path=str(task), trigger_id="t1", job_id="job-x")
    assert len(io.candidates) == 1  # the redelivery joined the job and published nothing
    await planner.tick()
    assert [c.id for c in io.candidates] == sorted(
        s.candidates, key=lambda i: s.candidates[i].attempt.version
    )
    assert all(r.published for r in s.candidates.values())


async def test_cpu_only_verdicts_end_the_job_honestly(task: Path, tmp_path: Path) -> None:
    io = MemoryIO()
    planner = Planner(io, {"rules": RulesPolicy()}, tmp_path / "cands")
    s = await planner.trigger(kernel="matmul_kernel", task_path=str(task), trigger_id="t1")
    for c in list(io.candidates):
        env = {"source": "verifier", "candidate_id": c.id, "kernel": c.kernel}
        await planner.verdict(Verdict(layer="static", status="pass", **env))
        await planner.verdict(
            Verdict(layer="micro", status="skipped", reasons=["perf: not measured, no GPU"], **env)
        )
        await planner.verdict(
            Verdict(
                layer="full",
                status="skipped",
                reasons=["not measured: no GPU"],
                measurements=[Measurement(name="speedup", not_measured="no GPU")],
                **env,
            )
        )
    assert s.status == "done" and s.best_score is None
    assert "nothing was measured" in s.reasons[-1]


def test_stop_rules() -> None:
    s = jobs.JobState(
        job_id="j",
        kernel="k",
        task_path="t",
        created_ts=0.0,
        updated_ts=0.0,
        budget=jobs.Budget(wall_s=100, gpu_s=10, candidates=5),
    )
    assert jobs.stop_reason(s, 50) is None
    assert jobs.stop_reason(s, 100)[0] == "budget_exhausted"
    s.gpu_seconds = 10
    assert "GPU budget" in jobs.stop_reason(s, 1)[1]
    s.gpu_seconds = 0
    s.round_best = [100.0, 100.5, 100.9]  # +0.5 %, +0.4 %: two rounds under 1 %
    assert jobs.stop_reason(s, 1)[0] == "converged"
    s.round_best = [100.0, 100.5, 102.0]
    assert jobs.stop_reason(s, 1) is None
    s.roofline_fraction = 0.96
    assert jobs.stop_reason(s, 1)[0] == "roofline"


async def test_verdict_timeout(task: Path, tmp_path: Path) -> None:
    io = MemoryIO()
    planner = Planner(io, {"rules": RulesPolicy()}, tmp_path / "cands", verdict_timeout_s=60)
    s = await planner.trigger(kernel="matmul_kernel", task_path=str(task), trigger_id="t1")
    n = len(io.candidates)
    io.t += 61
    await planner.tick()
    assert all(s.candidates[c.id].attempt.status == "timeout" for c in io.candidates[:n])
    # Nothing was measured, so the search has no best config to step from: the job ends and says why.
    assert s.status == "done" and "nothing was measured" in s.reasons[-1] and len(io.candidates) == n


class _Gate:
    def __init__(self, p: float) -> None:
        self.p = p

    def failure_probability(self, ctx: object) -> float:
        return self.p


class _NeverCalled:
    name = "llm"

    async def propose(self, ctx: object) -> None:
        raise AssertionError("the gate should have kept the llm policy out")


async def test_classifier_gate_skips_the_llm_at_085(task: Path, tmp_path: Path) -> None:
    io = MemoryIO()
    planner = Planner(io, {"rules": RulesPolicy(), "llm": _NeverCalled()}, tmp_path / "c", gate=_Gate(0.9))
    s = await planner.trigger(kernel="matmul_kernel", task_path=str(task), trigger_id="t1", policy="llm")
    assert io.candidates and any("P(fail)=0.90 >= 0.85" in n for n in s.notes)
    low = Planner(
        MemoryIO(), {"rules": RulesPolicy(), "llm": _NeverCalled()}, tmp_path / "d", gate=_Gate(0.5)
    )
    with pytest.raises(AssertionError, match="gate should have kept"):
        await low.trigger(kernel="matmul_kernel", task_path=str(task), trigger_id="t2", policy="llm")


class GridIO(MemoryIO):
    """MemoryIO whose launch_grid calls run the real tool in process (a sandboxed worker, no NATS)."""

    def __init__(self) -> None:
        super().__init__()
        self.grid_calls = 0

    async def call_tool(self, name: str, args: dict[str, Any]) -> ToolResult:
        if name != "launch_grid":
            return await super().call_tool(name, args)
        from services.toolrunner.tools.launch_grid.spec import run
        from shared.tools.grid import LaunchGridInput

        self.grid_calls += 1
        out = run(msgspec.convert(args, LaunchGridInput))
        return ToolResult(
            source="test", tool=name, tool_version="1", ok=True, result=msgspec.to_builtins(out)
        )


class SeeingRules(RulesPolicy):
    def __init__(self) -> None:
        super().__init__()
        self.programs: list[dict[str, int]] = []

    def plan(self, ctx: Any) -> Any:
        self.programs.append(dict(ctx.programs))
        return super().plan(ctx)


@pytest.mark.slow
async def test_the_search_reads_the_tasks_own_launch_grid_once_per_task_version(tmp_path: Path) -> None:
    """l2_bmm launches cdiv(m, BM) * cdiv(n, BN) programs per batch for 64 batches. Without the grid the
    shape model counted one batch (128 programs for 64x128 tiles: 'under one wave') and round 0 took
    small tiles; with it, the 128x256 / 256x128 tiles that won on the square matmul."""
    task = tmp_path / "l2_bmm.py"
    shutil.copy(ROOT / "benchmarks/tasks/l2_bmm.py", task)
    io, policy = GridIO(), SeeingRules()
    planner = Planner(io, {"rules": policy}, tmp_path / "cands")
    s = await planner.trigger(
        kernel="bmm_kernel", task_path=str(task), trigger_id="req-1", budget=jobs.Budget(candidates=8)
    )
    first = io.candidates[: len(io.candidates)]
    for c in first:  # verdicts without timing ("not measured"): the job goes on, the grid is not re-asked
        env = {"source": "verifier", "candidate_id": c.id, "kernel": c.kernel, **c.caused()}
        for layer in ("static", "full"):
            reasons = [] if layer == "static" else ["perf: not measured (test)"]
            status = "pass" if layer == "static" else "skipped"
            await planner.verdict(Verdict(layer=layer, status=status, reasons=reasons, **env))
    assert io.grid_calls == 1 and len(policy.programs) == 2, (io.grid_calls, len(policy.programs), s.status)
    programs = policy.programs[0]
    assert len(programs) == 216  # every config of the SPACE (3 x 3 x 3 x 2 x 4)
    from services.planner.search import config_key

    cfg = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 5}
    assert programs[config_key(cfg)] == 64 * (1024 // 64) * (1024 // 128)
    seeds = [(c.config["BLOCK_M"], c.config["BLOCK_N"]) for c in first]
    assert (128, 256) in seeds and (256, 128) in seeds, seeds
    assert s.job_id


class BadGridIO(MemoryIO):
    """launch_grid answers ok with results that do not match the request (TEST INPUT)."""

    async def call_tool(self, name: str, args: dict[str, Any]) -> ToolResult:
        if name != "launch_grid":
            return await super().call_tool(name, args)
        result = {"task_path": args["task_path"], "shape": {}, "results": [], "method": "test"}
        return ToolResult(source="test", tool=name, tool_version="1", ok=True, result=result)


async def test_a_malformed_launch_grid_answer_leaves_the_shape_model_in_charge(
    task: Path, tmp_path: Path
) -> None:
    io, policy = BadGridIO(), SeeingRules()
    planner = Planner(io, {"rules": policy}, tmp_path / "cands")
    await planner.trigger(kernel="matmul_kernel", task_path=str(task), trigger_id="r", budget=jobs.Budget())
    assert policy.programs == [{}] and io.candidates  # planned anyway, from the model


class _ScreenedRules(RulesPolicy):
    """Rules' plan, plus what a screening policy (the llm policy) left out of it and why."""

    name = "llm"

    async def propose(self, ctx: Any) -> Any:
        plan = await super().propose(ctx)
        plan.rejected = ["rejected llm answer candidate 1: change -1 (parse): the patched source does not parse"]
        return plan


async def test_candidates_a_policy_screened_out_are_kept_in_the_job_notes(task: Path, tmp_path: Path) -> None:
    io = MemoryIO()
    planner = Planner(io, {"rules": RulesPolicy(), "llm": _ScreenedRules()}, tmp_path / "c")
    s = await planner.trigger(kernel="matmul_kernel", task_path=str(task), trigger_id="t1", policy="llm")
    assert io.candidates
    assert any(n.startswith("rejected llm answer candidate 1") and "does not parse" in n for n in s.notes)
