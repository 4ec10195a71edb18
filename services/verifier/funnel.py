"""The three-layer funnel: static -> micro -> full. One loop, readable top to bottom.

`verify(job, client)` calls tools through a `ToolClient` and returns one Verdict per layer reached; a
candidate stops at the first layer that fails. Without a GPU the static layer and the correctness half of
the micro layer run, the timing measurements say "not measured: no GPU" and the full layer is "skipped".
A failed candidate is a verdict, never an exception (DESIGN.md rule 5). A candidate whose job ended
before a layer starts is withdrawn: one `withdrawn` verdict at that layer, which is not a rejection.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from services.verifier import full_checks, micro_checks, source_checks, static_checks
from services.verifier.client import ToolCallError, call_typed
from services.verifier.policy import VerifyPolicy
from shared.messages import Layer, Measurement, Provenance, Scalar, ToolResult, Verdict, VerdictStatus
from shared.toolclient import ToolClient, ToolInfraError
from shared.tools.bench import BenchABInput, BenchABOutput, BenchInput, BenchOutput, BenchSubject
from shared.tools.compile import CompileInput, CompileOutput
from shared.tools.honesty import HonestyInput, HonestyOutput
from shared.tools.inspect import PtxasInfoInput, PtxasInfoOutput, SassInput, SassKernel, SassOutput
from shared.tools.run import RunCorrectnessInput, RunCorrectnessOutput
from shared.tools.task import LoadTaskInput, TaskManifest

# Every tool the funnel calls (an in-process stand-in for the toolrunner serves these).
TOOLS = ("load_task", "compile", "ptxas_info", "sass", "run_correctness", "honesty_probe", "bench", "bench_ab")

NO_GPU = "no GPU"
GPU_TOOLS = ("bench", "bench_ab")
SOURCE = "verifier"


class VerifyJob(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One candidate to verify: the task (reference and default baseline) and what changed."""

    candidate_id: str
    task_path: str
    candidate_path: str | None = None  # a candidate task file; None = the task itself under `config`
    candidate_sha256: str = ""  # the planner's sha256 of the candidate file ("" = not given): checked first
    config: dict[str, Scalar] = {}  # overrides of the candidate's CONFIG
    parent_path: str | None = None  # the baseline's file (default: the task)
    parent_config: dict[str, Scalar] = {}
    kernel: str = ""  # the name verdicts are published under ("" = the task's primary kernel)
    job_id: str | None = None
    causation_id: str | None = None


def changed_since_planned(job: VerifyJob) -> str:
    """Why the candidate file is not the one the planner wrote ("" = it is, or no hash was given): the
    verdict must be about the bytes that ship."""
    if not job.candidate_path or not job.candidate_sha256:
        return ""
    try:
        got = hashlib.sha256(Path(job.candidate_path).read_bytes()).hexdigest()
    except OSError as e:
        return f"candidate file unreadable: {job.candidate_path}: {e.strerror or e}"
    if got != job.candidate_sha256:
        return (f"candidate file {job.candidate_path} is not the one the planner wrote (sha256 {got[:12]}..., "
                f"planned {job.candidate_sha256[:12]}...): it changed after planning; nothing was measured")
    return ""


def candidate_sources(job: VerifyJob) -> tuple[str, str] | None:
    """(candidate source, task source) for a candidate file; None for a config-only candidate. Read as
    text for source_checks (parsed, never run). An unreadable file is left to the tools to report."""
    if not job.candidate_path:
        return None
    try:
        return Path(job.candidate_path).read_text(), Path(job.task_path).read_text()
    except (OSError, UnicodeDecodeError):
        return None


class LayerFailed(Exception):
    """Ends a layer early with reasons (a failed candidate, not a bug)."""

    def __init__(self, reasons: list[str], hazard: bool = False, lines: list[str] | None = None) -> None:
        super().__init__("; ".join(reasons))
        self.reasons, self.hazard, self.lines = reasons, hazard, lines or []


@dataclass
class LayerRun:
    """What one layer gathered: measurements, GPU seconds, provenance; turned into its Verdict."""

    layer: Layer
    start: float = field(default_factory=time.perf_counter)
    measurements: list[Measurement] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    gpu_seconds: float = 0.0
    provenance: Provenance = field(default_factory=Provenance)
    methods: list[str] = field(default_factory=list)

    def account(self, res: ToolResult, on_gpu: bool = False) -> None:
        if res.tool in GPU_TOOLS or on_gpu:
            self.gpu_seconds += res.duration_s


Publish = Callable[[Verdict], Awaitable[None]]
# Why the candidate's job has ended (the candidate is then withdrawn), or None while it is open.
Ended = Callable[[], Awaitable[str | None]]
WITHDRAWN = "withdrawn"


class Funnel:
    def __init__(self, client: ToolClient, policy: VerifyPolicy | None = None,
                 ended: Ended | None = None) -> None:
        self.client, self.policy, self.ended = client, policy or VerifyPolicy(), ended

    async def _call(self, run: LayerRun, tool: str, args: msgspec.Struct, out: type[Any]) -> Any:
        value, res = await call_typed(self.client, tool, args, out)
        run.account(res, on_gpu=str(getattr(value, "device", "")).startswith("cuda"))
        return value

    # ------------------------------------------------------------ layer 1: static

    async def static(self, job: VerifyJob, task: TaskManifest, run: LayerRun) -> None:
        cand_path = job.candidate_path or job.task_path
        parent_path = job.parent_path or job.task_path
        target = self.policy.target
        method = f"harness (ast) against the task's, compile {target}, ptxas -v, SASS diff against the parent"
        run.provenance = Provenance(device="none (static)", method=method)  # a failed compile says it too
        if (sources := candidate_sources(job)) and (changed := source_checks.harness_changes(*sources)):
            raise LayerFailed(changed)
        try:
            compiled: CompileOutput = await self._call(
                run,
                "compile",
                CompileInput(task_path=cand_path, config=job.config, target=target),
                CompileOutput,
            )
        except ToolCallError as e:
            raise LayerFailed([f"does not compile for {target}: {e.error.message}"]) from e
        versions = {v.name: v.version for v in compiled.tool_versions}
        run.provenance = Provenance(
            device="none (static)",
            triton=versions.get("triton", ""),
            torch=versions.get("torch", ""),
            cuda=versions.get("nvcc", ""),
            method=method,
        )
        # The parent's compile next, on its own: a compile imports its file (user code), so the candidate's
        # and the parent's never run side by side. Cached after the first candidate of a parent; a failure
        # is left for ptxas_info to report, as before this call existed.
        try:
            await self._call(
                run,
                "compile",
                CompileInput(task_path=parent_path, config=job.parent_config, target=target),
                CompileOutput,
            )
        except ToolCallError:
            pass
        # Both compiles are cached now: the six inspections below run ptxas and the disassemblers on those
        # binaries (no user code) and are independent, so they run at once (vector_add, warm parent:
        # 1.2 s one by one, 0.6 s together on 2 cores, benchmarks/profile_funnel.py; the toolrunner
        # bounds them with its CPU pool).
        res_c, res_p, sass_c, sass_p, cf_c, cf_p = await self._gather(
            self._call(
                run,
                "ptxas_info",
                PtxasInfoInput(task_path=cand_path, config=job.config, target=target),
                PtxasInfoOutput,
            ),
            self._call(
                run,
                "ptxas_info",
                PtxasInfoInput(task_path=parent_path, config=job.parent_config, target=target),
                PtxasInfoOutput,
            ),
            self._sass(run, cand_path, job.config, "nvdisasm"),
            self._sass(run, parent_path, job.parent_config, "nvdisasm"),
            self._sass(run, cand_path, job.config, "cuobjdump"),
            self._sass(run, parent_path, job.parent_config, "cuobjdump"),
        )
        kc, kp = res_c.kernel_resources(), res_p.kernel_resources()
        run.measurements += [
            Measurement(name="registers", value=float(kc.registers or 0), unit="per thread"),
            Measurement(
                name="shared_bytes",
                value=float(kc.shared_bytes + (res_c.dynamic_shared_bytes or 0)),
                unit="bytes per block",
            ),
            Measurement(
                name="spill_bytes",
                value=float(kc.spill_loads_bytes + kc.spill_stores_bytes),
                unit="bytes per thread",
            ),
        ]
        findings = static_checks.resource_findings(
            kc,
            kp,
            res_c.dynamic_shared_bytes,
            max_registers=self.policy.max_registers,
            max_shared=self.policy.max_shared_bytes,
            allow_spills=self.policy.allow_new_spills,
        )
        findings += static_checks.local_memory_findings(sass_c, sass_p, self.policy.allow_new_spills)
        findings += static_checks.precision_findings(sass_c, sass_p, task.precision, task.dtype)
        findings += static_checks.hazard_findings(sass_c, sass_p, cf_c, cf_p)
        run.measurements.append(
            Measurement(name="sass_instructions", value=float(sass_c.summary.instructions))
        )
        if findings:
            raise LayerFailed(
                [f.reason for f in findings],
                hazard=any(f.hazard for f in findings),
                lines=[ln for f in findings for ln in f.lines],
            )

    @staticmethod
    async def _gather(*calls: Awaitable[Any]) -> list[Any]:
        """Await independent tool calls together. Once all have ended, an infrastructure failure is raised
        first (the candidate is verified again later), else the first failure in argument order: the
        reason a one-by-one sequence would have given, whichever call failed first."""
        results = await asyncio.gather(*calls, return_exceptions=True)
        for r in results:
            if isinstance(r, ToolInfraError):
                raise r
        for r in results:
            if isinstance(r, BaseException):
                raise r
        return list(results)

    async def _sass(
        self, run: LayerRun, path: str, config: dict[str, Scalar], disassembler: str
    ) -> SassKernel:
        out: SassOutput = await self._call(
            run,
            "sass",
            SassInput(task_path=path, config=config, target=self.policy.target, disassembler=disassembler),
            SassOutput,
        )  # type: ignore[arg-type]
        if not out.kernels:
            raise LayerFailed([f"the sass tool found no kernel in {path}'s binary"])
        return out.kernels[0]

    # ------------------------------------------------------------ layer 2: micro

    async def micro(self, job: VerifyJob, run: LayerRun) -> bool:
        """False when correctness could not be checked here (then the full layer is skipped too).

        The honesty probe starts beside the correctness run (both share the GPU, neither times it:
        call_slots.py); its answer is read only once correctness passed, and it is cancelled when
        correctness fails. H100 run r54: the two took 15-27 s and 17-36 s one after the other, over half
        of each captured candidate's funnel time."""
        probe = asyncio.ensure_future(self._call(
            run,
            "honesty_probe",
            HonestyInput(
                task_path=job.task_path,
                candidate_path=job.candidate_path,
                config=job.config,
                seeds=list(self.policy.honesty_seeds),
            ),
            HonestyOutput,
        ))
        try:
            return await self._micro_checks(job, run, probe)
        finally:
            if not probe.done():
                probe.cancel()
            with contextlib.suppress(BaseException):
                await probe  # never left pending: its failure, if unread, is not the layer's answer

    async def _micro_checks(self, job: VerifyJob, run: LayerRun, probe: asyncio.Future[Any]) -> bool:
        corr: RunCorrectnessOutput = await self._call(
            run,
            "run_correctness",
            RunCorrectnessInput(
                task_path=job.task_path,
                candidate_path=job.candidate_path,
                config=job.config,
                shapes=["micro", "edge"],
                seeds=list(self.policy.seeds),
            ),
            RunCorrectnessOutput,
        )
        run.provenance = Provenance(
            device=corr.device,
            method=(
                f"run_correctness: micro + every edge shape x seeds {list(self.policy.seeds)}, candidate "
                "then reference in fresh processes; honesty_probe: reference then candidate; a reference "
                "case runs once per task file sha256 and runner, then its outputs are reused; source (ast): no "
                "capability the task does not use"
            ),
        )
        run.measurements += micro_checks.correctness_measurements(corr)
        if reasons := micro_checks.correctness_reasons(corr):
            raise LayerFailed(reasons)
        unchecked = micro_checks.not_checked(corr)
        if unchecked and all(c.status == "not_checked" for c in corr.cases):
            run.reasons += [f"correctness not checked: {u}" for u in unchecked] + [f"not measured: {NO_GPU}"]
            return False
        run.reasons += [f"not checked: {u}" for u in unchecked]
        try:
            honest: HonestyOutput = await probe
        except ToolCallError as e:
            if not e.unavailable:
                raise LayerFailed([f"honesty probe failed: {e.error.message}"]) from e
            run.reasons.append(f"honesty probe not run: {e.error.message}")
        else:
            if reasons := micro_checks.honesty_reasons(honest):
                raise LayerFailed(reasons)
            run.reasons += [f"not checked: {n}" for n in honest.not_checked]
        # Behaviour watched looked honest; what the source can do unwatched is judged last (source_checks).
        if (sources := candidate_sources(job)) and (reasons := source_checks.capability_findings(*sources)):
            raise LayerFailed(reasons)
        await self._stability(job, run)
        return True

    async def _stability(self, job: VerifyJob, run: LayerRun) -> None:
        correctness_method = run.provenance.method
        for attempt in range(1 + self.policy.cv_remeasures):
            try:
                b: BenchOutput = await self._call(
                    run,
                    "bench",
                    # Graph replay always: a micro-shape call lasts a few microseconds, and eager timing
                    # of it measures the host's launch jitter (the H200 gave CV 32-61 % that way).
                    BenchInput(
                        task_path=job.candidate_path or job.task_path, shape="micro", config=job.config,
                        cuda_graph="on",
                    ),
                    BenchOutput,
                )
            except ToolCallError as e:
                if not e.unavailable:
                    raise LayerFailed([f"micro timing failed: {e.error.message}"]) from e
                run.measurements.append(Measurement(name="micro_cv", not_measured=NO_GPU))
                run.reasons.append(f"timing stability not measured: {NO_GPU}")
                return
            run.measurements.append(micro_checks.cv_measurement(b, attempt))
            run.provenance = msgspec.structs.replace(
                b.provenance, method=f"{correctness_method}; micro timing: {b.method.description}"
            )
            if micro_checks.stable(b, self.policy.max_cv):
                return
        raise LayerFailed(
            [
                (
                    f"quarantined as unstable: micro timing CV {micro_checks.robust_cv(b):.1%} (robust, from "
                    f"p20-p80; plain {b.stats.cv:.1%}) >= "
                    f"{self.policy.max_cv:.0%} after {1 + self.policy.cv_remeasures} measurements"
                )
            ]
        )

    # ------------------------------------------------------------ layer 3: full

    async def full(self, job: VerifyJob, task: TaskManifest, run: LayerRun) -> VerdictStatus:
        args = BenchABInput(
            a=BenchSubject(
                task_path=job.parent_path or job.task_path, config=job.parent_config, label="parent"
            ),
            b=BenchSubject(
                task_path=job.candidate_path or job.task_path, config=job.config, label="candidate"
            ),
            shape="full",
        )
        try:
            ab: BenchABOutput = await self._call(run, "bench_ab", args, BenchABOutput)
        except ToolCallError as e:
            if not e.unavailable:
                raise LayerFailed([f"full-shape timing failed: {e.error.message}"]) from e
            run.measurements.append(Measurement(name="speedup", not_measured=NO_GPU))
            run.reasons.append(f"not measured: {NO_GPU}")
            run.provenance = Provenance(method="bench_ab (interleaved ABBA, bootstrap 95 % CI): not run")
            return "skipped"
        run.provenance = msgspec.structs.replace(
            ab.provenance,
            method=f"bench_ab {ab.order}: {ab.method.description}; bootstrap 95 % CI of the speedup",
        )
        reasons, ms = full_checks.judge_speedup(ab, task, self.policy)
        run.measurements += ms
        if reasons:
            raise LayerFailed(reasons)
        return "pass"

    # ------------------------------------------------------------ the loop

    async def verify(self, job: VerifyJob, publish: Publish | None = None) -> list[Verdict]:
        verdicts: list[Verdict] = []

        async def emit(run: LayerRun, status: VerdictStatus, failed: LayerFailed | None = None) -> Verdict:
            v = Verdict(
                source=SOURCE,
                job_id=job.job_id,
                causation_id=job.causation_id,
                candidate_id=job.candidate_id,
                kernel=kernel,
                layer=run.layer,
                status=status,
                reasons=(failed.reasons if failed else []) + run.reasons,
                measurements=run.measurements,
                provenance=run.provenance,
                gpu_seconds=round(run.gpu_seconds, 6),
                needs_review=bool(failed and failed.hazard),
                annotations=failed.lines if failed else [],
                wall_s=round(time.perf_counter() - run.start, 3),
                candidate_path=job.candidate_path or "",
                config=dict(job.config),
            )
            verdicts.append(v)
            if publish is not None:
                await publish(v)
            return v

        kernel = job.kernel
        run = LayerRun("static")
        if why := changed_since_planned(job):
            await emit(run, "fail", LayerFailed([why]))
            return verdicts
        try:
            task: TaskManifest = await self._call(
                run, "load_task", LoadTaskInput(path=job.task_path), TaskManifest
            )
        except ToolCallError as e:
            await emit(run, "fail", LayerFailed([f"task refused: {e.error.message}"]))
            return verdicts
        kernel = kernel or task.primary or task.name
        layers: list[tuple[Layer, Callable[[LayerRun], Awaitable[Any]]]] = [
            ("static", lambda r: self.static(job, task, r)),
            ("micro", lambda r: self.micro(job, r)),
            ("full", lambda r: self.full(job, task, r)),
        ]
        checked = True
        for name, step in layers:
            run = run if name == "static" else LayerRun(name)
            # Checked before every layer: a job that ended (budget, convergence, cancel) while its
            # candidate queued or between layers gets its candidate withdrawn, not verified.
            if self.ended is not None and (why := await self.ended()):
                await emit(run, "withdrawn", LayerFailed([f"{WITHDRAWN}: {why}; not verified"]))
                break
            if name == "full" and not checked:
                run.reasons.append("skipped: correctness was not checked on this machine")
                run.measurements.append(Measurement(name="speedup", not_measured=NO_GPU))
                await emit(run, "skipped")
                break
            try:
                result = await step(run)
            except LayerFailed as f:
                await emit(run, "fail", f)
                break
            except ToolCallError as e:
                await emit(
                    run, "fail", LayerFailed([f"{e.tool} could not run: {e.error.code}: {e.error.message}"])
                )
                break
            if name == "micro":
                checked = bool(result)
            await emit(run, result if name == "full" else ("pass" if result is not False else "skipped"))
        return verdicts


async def verify(
    job: VerifyJob, client: ToolClient, policy: VerifyPolicy | None = None, publish: Publish | None = None
) -> list[Verdict]:
    return await Funnel(client, policy).verify(job, publish)
