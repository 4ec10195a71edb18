"""The planner's iteration loop, readable top to bottom (mini-swe-agent's shape):

    trigger -> open/join job -> round: context -> policy -> patch -> persist -> publish candidates
    verdict -> record -> round finished? -> stop rule? -> close job : next round

Everything that touches the bus, the decomposer or the clock is the injected `PlannerIO`, so the loop is
tested without NATS; the adapter (service.py) binds it to the bus. State is saved before candidates are
published, so a restart republishes exactly the unpublished ones and plans nothing twice.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any, Protocol

import msgspec

from services.planner import jobs
from services.planner.context import (
    ComputedConfig,
    TaskView,
    build_context,
    defines_constraint,
    primary_of,
    read_task,
)
from services.planner.patcher import CandidateVersion, PatchRejected, make_candidate, sha256_text
from services.planner.policies.base import Plan, Policy
from services.planner.search import all_configs, programs_from
from shared.constraint_table import ConstraintScope, refusing, scope_of
from shared.ids import new_id
from shared.messages import Candidate, JobUpdate, StateTriple, ToolResult, Verdict
from shared.space_list import points
from shared.tools.decompose import Decomposition
from shared.tools.grid import MAX_CONFIGS as MAX_GRID_CONFIGS
from shared.tools.grid import LaunchGridOutput
from shared.tools.task import TaskManifest

MAX_TOOL_CALLS = 4  # per plan: a policy that wants more is exploring, not deciding
CONSTRAINT_REFUSED = "refused by the task's constraint"


def constraint_line(scopes: list[ConstraintScope], skipped: int, left_out: int) -> str:
    """The job log's one line on the task's constraint for a round: the refused configs the search passed
    over (each once), the proposed candidates left out for it, and what the tables hold."""
    return (f"constraint: the search skipped {skipped:,} configs the task's constraint refuses, "
            f"{left_out} proposed candidate(s) left out for it; tables: "
            + "; ".join(sc.describe() for sc in scopes))[:400]


def kernel_of(task_path: str) -> str:
    """The task's primary kernel (KERNELS[0], else the first @triton.jit function), else the file's stem."""
    try:
        return primary_of(task_path, Path(task_path).read_text()) or Path(task_path).stem
    except (OSError, ValueError, SyntaxError):
        return Path(task_path).stem


class PlannerIO(Protocol):
    async def analyze(self, task_path: str, config: dict[str, Any]) -> Decomposition | None: ...
    async def call_tool(self, name: str, args: dict[str, Any]) -> ToolResult: ...
    async def publish_candidate(self, c: Candidate) -> None: ...
    async def publish_update(self, u: JobUpdate) -> None: ...
    async def save(self, s: jobs.JobState) -> None: ...
    def now(self) -> float: ...


class Gate(Protocol):
    """The failure classifier: probability that the llm policy's plan for this context fails."""

    def failure_probability(self, ctx: Any) -> float | None: ...


class Planner:
    def __init__(
        self,
        io: PlannerIO,
        policies: dict[str, Policy],
        candidate_root: Path,
        *,
        source: str = "planner",
        verdict_timeout_s: float = 900.0,
        gate: Gate | None = None,
        gate_threshold: float = 0.85,
    ) -> None:
        self.io = io
        self.policies = policies
        self.root = candidate_root
        self.source = source
        self.verdict_timeout_s = verdict_timeout_s
        self.gate = gate
        self.gate_threshold = gate_threshold
        self.jobs: dict[str, jobs.JobState] = {}
        self.by_candidate: dict[str, str] = {}
        self.triples: dict[str, list[StateTriple]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._programs: dict[str, dict[str, int]] = {}  # task sha256 -> launch_grid's programs per config
        # file sha256 -> load_task's manifest (a computed CONFIG, the constraint table)
        self._manifests: dict[str, TaskManifest] = {}
        self._load_failures: dict[tuple[str, str], str] = {}  # (job id, file sha256) -> why no manifest

    # ------------------------------------------------------------ entry points

    async def resume(self, states: list[jobs.JobState]) -> None:
        """After a restart: take the saved jobs back, republish what was not published, carry on."""
        for s in states:
            self._index(s)
        for s in states:
            if jobs.is_open(s):
                async with self._lock(s.job_id):
                    await self._publish_pending(s)
                    await self._advance(s)

    async def trigger(
        self,
        *,
        kernel: str,
        task_path: str,
        trigger_id: str,
        policy: str = "rules",
        budget: jobs.Budget | None = None,
        triples: list[StateTriple] | None = None,
        job_id: str | None = None,
    ) -> jobs.JobState:
        s, joined = jobs.open_or_join(
            self.jobs.values(),
            kernel=kernel,
            task_path=task_path,
            trigger_id=trigger_id,
            job_id=job_id or f"job-{new_id()}",
            now=self.io.now(),
            policy=policy,
            budget=budget,
        )
        if triples:
            self.triples[s.job_id] = triples
        async with self._lock(s.job_id):
            self._index(s)
            if joined:
                await self._save_and_tell(s, f"trigger {trigger_id} joined the open job")
                return s
            try:
                source = Path(task_path).read_text()
                await self._read_task(task_path, source)
            except (OSError, ValueError, SyntaxError) as e:
                jobs.finish(s, "failed", f"cannot read task {task_path}: {e}", self.io.now())
                await self._save_and_tell(s, "task refused")
                return s
            base = self.root / sha256_text(source) / "task.py"
            if not base.exists():
                base.parent.mkdir(parents=True, exist_ok=True)
                base.write_text(source)
            s.base_path = str(base)
            await self._save_and_tell(s, f"job opened for {kernel} by {trigger_id}")
            await self._advance(s)
        return s

    async def verdict(self, v: Verdict) -> None:
        job_id = self.by_candidate.get(v.candidate_id)
        s = self.jobs.get(job_id or "")
        if s is None:
            return
        async with self._lock(s.job_id):
            if jobs.record_verdict(s, v, self.io.now()) and jobs.is_open(s):
                await self._advance(s)
            elif not jobs.is_open(s):
                await self.io.save(s)  # a late verdict of a closed job still lands in its record

    async def cancel(self, job_id: str, reason: str) -> jobs.JobState | None:
        """End an open job now (`kpilot cancel`); the verifier withdraws its queued candidates when it
        sees the job's final update. None for a job this planner does not know."""
        s = self.jobs.get(job_id)
        if s is None:
            return None
        async with self._lock(job_id):
            if jobs.is_open(s):
                jobs.finish(s, "cancelled", reason, self.io.now())
                await self._save_and_tell(s, f"cancelled: {reason}")
        return s

    async def tick(self) -> None:
        """Periodic: republish candidates whose publish failed, time out silent candidates and apply the
        wall-time budget."""
        for s in list(self.jobs.values()):
            if jobs.is_open(s):
                async with self._lock(s.job_id):
                    # A publish that timed out while nats-server restarted left candidates unpublished,
                    # and the redelivered trigger only joins the job (tests/e2e/test_nats_restart.py);
                    # republishing is safe: the stream de-duplicates on the candidate's id.
                    if any(not r.published for r in s.candidates.values()):
                        await self._publish_pending(s)
                    jobs.expire(s, self.io.now(), self.verdict_timeout_s)
                    await self._advance(s)

    # ------------------------------------------------------------ the loop

    async def _advance(self, s: jobs.JobState) -> None:
        """Stop, wait, or plan the next round: called after every event of the job."""
        now = self.io.now()
        stop = jobs.stop_reason(s, now)
        if stop is not None:
            jobs.finish(s, *stop, now)
            await self._save_and_tell(s, stop[1])
            return
        if jobs.pending(s):
            await self.io.save(s)
            return
        jobs.close_round(s)
        stop = jobs.stop_reason(s, now)
        if stop is not None:
            jobs.finish(s, *stop, now)
            await self._save_and_tell(s, stop[1])
            return
        await self._round(s)

    async def _round(self, s: jobs.JobState) -> None:
        s.status = "planning"
        task = await self._read_task(s.base_path, Path(s.base_path).read_text())
        decomposition = await self.io.analyze(jobs.analysis_path(s), jobs.best_config(s, task.config))
        ctx = build_context(task, s.kernel, decomposition, self.triples.get(s.job_id), jobs.attempts(s))
        ctx.rejected = [n for n in s.notes if n.startswith("rejected")][-6:]
        ctx.programs = await self._launch_programs(task)
        ctx.constraints, unchecked = await self._constraints(s)
        for text in unchecked:
            if text not in s.notes:  # once per job, not once per round
                jobs.note(s, text)
        plan = await self._plan(s, ctx)
        if plan.llm is not None:
            s.llm = jobs.add_usage(s.llm, plan.llm)
            u = plan.llm
            text = (f"llm {u.dialect} {u.model} format {u.constraint or '-'}: {u.calls} calls, "
                    f"{u.prompt_tokens}+{u.completion_tokens} tokens, {u.seconds:.1f} s"
                    + (f"; fell back to rules: {u.fallback}" if u.fallback else ""))
            jobs.note(s, text[:400])
        if plan.tool_calls:
            ctx.tool_results = await self._tools(plan)
        skipped = sum(len(sc.seen) for sc in ctx.constraints)  # by the policy's search, before the gate
        versions, rejected = self._patch(s, task, plan, ctx.constraints)
        for r in plan.rejected + rejected:
            jobs.note(s, r)
        if ctx.constraints:
            left_out = sum(CONSTRAINT_REFUSED in r for r in rejected)
            jobs.note(s, constraint_line(ctx.constraints, skipped, left_out))
        budget_left = s.budget.candidates - len(s.candidates)
        versions = versions[: max(budget_left, 0)]
        if not versions:
            has_score = s.best_score is not None
            status = "converged" if has_score else "done"
            failed = sum(a.status == "fail" for a in jobs.attempts(s))
            why = f"{plan.policy or s.policy} policy has nothing new to try" + (
                "" if has_score else f"; no candidate passed ({failed} failed)" if failed
                else "; nothing was measured (no verdict carried a timing: no GPU here?)"
            )
            jobs.finish(s, status, why, self.io.now())  # type: ignore[arg-type]
            await self._save_and_tell(s, why)
            return
        cands = jobs.add_candidates(
            s, versions, source=self.source, now=self.io.now(), parent_id=s.best_candidate_id, llm=plan.llm
        )
        for c in cands:
            self.by_candidate[c.id] = s.job_id
        jobs.note(s, f"round {s.iteration} ({plan.policy}): {plan.analysis}"[:400])
        await self.io.save(s)  # persisted before publishing: a crash here republishes, never re-plans
        await self._publish_pending(s)
        await self._save_and_tell(s, f"round {s.iteration}: {len(cands)} candidates ({plan.policy})")

    async def _read_task(self, path: str, source: str) -> TaskView:
        """read_task, asking the toolrunner's load_task for a CONFIG/SPACE computed by code (the planner
        never imports a task, DESIGN.md rule 4); the manifest is kept per file version."""
        try:
            return read_task(path, source)
        except ComputedConfig:
            pass
        got = await self._manifest(path, source)
        if isinstance(got, TaskManifest):
            return read_task(path, source, evaluated=got)
        if got.startswith("answered"):
            raise ValueError(f"{path}: load_task {got}")
        raise ValueError(f"{path}: CONFIG is computed by code and load_task could not evaluate it "
                         f"({got}); fix the task, or write CONFIG as a literal dict")

    async def _manifest(self, path: str, source: str) -> TaskManifest | str:
        """load_task's manifest of this file version (kept once had), or why there is none."""
        key = sha256_text(source)
        if key not in self._manifests:
            r = await self.io.call_tool("load_task", {"path": path})
            if not r.ok or r.result is None:
                return f"{r.error.code}: {r.error.message}" if r.error else "no answer"
            try:
                self._manifests[key] = msgspec.convert(r.result, TaskManifest)
            except msgspec.ValidationError as e:
                return f"answered an invalid manifest: {e}"
        return self._manifests[key]

    async def _constraints(self, s: jobs.JobState) -> tuple[list[ConstraintScope], list[str]]:
        """load_task's tables of the task's constraint() for this round, each with what it numbers: the
        parent's file first (the best candidate's once it carries a transformation, whose SPACE holds the
        knob the transformation added), then the task as the job found it. A file without a constraint
        function is not asked about. Also one line per table the planner cannot use (it then proposes
        as without one: the verifier's static layer still checks each candidate's CONFIG)."""
        out: list[ConstraintScope] = []
        notes: list[str] = []
        for path in dict.fromkeys([jobs.analysis_path(s), s.base_path]):
            try:
                source = Path(path).read_text()
            except OSError:
                continue
            if not defines_constraint(source):
                continue
            failed = (s.job_id, sha256_text(source))
            got = self._load_failures.get(failed) or await self._manifest(path, source)
            if isinstance(got, str):
                self._load_failures[failed] = got  # asked again by the next job, not every round
            name = Path(path).parent.name[:12] + "/" + Path(path).name if path != s.base_path else s.task_path
            if isinstance(got, str):
                notes.append(f"constraint of {name} not checked by the planner: load_task {got}"[:400])
            elif (scope := scope_of(got)) is not None and scope.table.status != "complete":
                notes.append(f"constraint of {name} not checked by the planner: {scope.table.note}"[:400])
            elif scope is not None:
                out.append(scope)
        return out, notes

    async def _launch_programs(self, task: Any) -> dict[str, int]:
        """Programs per config from the launch_grid tool, once per task file version ({} when the tool
        cannot record them: the search then uses its shape model)."""
        if task.sha256 in self._programs:
            return self._programs[task.sha256]
        got: dict[str, int] = {}
        listed = points(task.config, task.space_configs)
        if (listed and len(listed) <= MAX_GRID_CONFIGS) or (
                not listed and task.space and math.prod(len(v) for v in task.space.values()) <= MAX_GRID_CONFIGS):
            configs = listed or all_configs(task.space, task.config)
            r = await self.io.call_tool("launch_grid", {"task_path": task.path, "configs": configs})
            if r.ok and r.result is not None:
                try:
                    grids = msgspec.convert(r.result, LaunchGridOutput).results
                    got = programs_from(configs, grids, task.primary)
                except (msgspec.ValidationError, ValueError):  # a malformed answer: keep the shape model
                    got = {}
        self._programs[task.sha256] = got
        return got

    async def _plan(self, s: jobs.JobState, ctx: Any) -> Plan:
        name = s.policy if s.policy in self.policies else "rules"
        if name != "rules" and self.gate is not None:
            p = self.gate.failure_probability(ctx)
            if p is not None and p >= self.gate_threshold:
                jobs.note(s, f"classifier: P(fail)={p:.2f} >= {self.gate_threshold}: rules instead of {name}")
                name = "rules"
        plan = await self.policies[name].propose(ctx)
        plan.policy = plan.policy or name
        return plan

    async def _tools(self, plan: Plan) -> list[str]:
        out = []
        for call in plan.tool_calls[:MAX_TOOL_CALLS]:
            r = await self.io.call_tool(call.tool, call.args)
            text = (
                str(r.result)[:300]
                if r.ok
                else f"error {r.error.code}: {r.error.message}"
                if r.error
                else "?"
            )
            out.append(f"{call.tool}: {text}")
        return out

    def _patch(
        self, s: jobs.JobState, task: TaskView, plan: Plan, constraints: list[ConstraintScope] | None = None,
    ) -> tuple[list[tuple[CandidateVersion, str]], list[str]]:
        """Each plan candidate applied to the task; left out (with a line saying why): what the patcher
        refuses, a config the task's constraint refuses (any policy's: the rules search already skips
        them, an llm answer or a transformation's estimated config may not), and repeated bytes."""
        source = task.source
        seen = {r.candidate.source_sha256 for r in s.candidates.values()} | {sha256_text(source)}
        out, rejected = [], []
        for i, cp in enumerate(plan.candidates):
            got = make_candidate(
                self.root, s.task_path, source, cp.changes, version=s.next_version + len(out),
                config=task.config, space=task.space_configs or task.space,
            )
            if isinstance(got, PatchRejected):
                rejected.append(f"rejected plan candidate {i}: {got.summary()}"[:400])
                continue
            if (by := refusing(constraints or [], got.config)) is not None:
                rejected.append(f"rejected plan candidate {i}: config {got.config} {CONSTRAINT_REFUSED} "
                                f"({by.describe()})"[:400])
                continue
            if got.sha256 in seen:
                continue  # same bytes as a candidate already tried (or the start): nothing new to learn
            seen.add(got.sha256)
            out.append((got, cp.rationale))
        return out, rejected

    async def _publish_pending(self, s: jobs.JobState) -> None:
        for r in sorted(s.candidates.values(), key=lambda r: r.attempt.version):
            if not r.published:
                await self.io.publish_candidate(r.candidate)
                r.published = True
        await self.io.save(s)

    async def _save_and_tell(self, s: jobs.JobState, text: str) -> None:
        await self.io.save(s)
        await self.io.publish_update(jobs.update(s, source=self.source, note_text=text, now=self.io.now()))

    def _index(self, s: jobs.JobState) -> None:
        self.jobs[s.job_id] = s
        for cid in s.candidates:
            self.by_candidate[cid] = s.job_id

    def _lock(self, job_id: str) -> asyncio.Lock:
        return self._locks.setdefault(job_id, asyncio.Lock())
