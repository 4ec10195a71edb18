"""The sanitize tool: compute-sanitizer memcheck / racecheck (and initcheck, synccheck) on a task's launch.

GPU only. One warm-up launch plus one checked launch of the task's kernel per sanitizer tool; the text
output is parsed here (shared/parsers/sanitizer.py) into one verdict per tool.
"""

from __future__ import annotations

import msgspec

from services.toolrunner.nvtools import require_gpu
from services.toolrunner.sandbox import Limits, run_worker
from services.toolrunner.tasks import load_for_tool
from services.toolrunner.tool import ToolFailure, ToolSpec
from services.toolrunner.tools.ncu_profile.spec import resolve_kernel
from services.toolrunner.tools.sanitize.worker import SanitizeWorkerRequest, SanitizeWorkerResult
from services.toolrunner.worker_lib.launch_task import LaunchTaskRequest
from shared.messages import Provenance
from shared.parsers.sanitizer import parse_sanitizer_output
from shared.tools.profile import SanitizeInput, SanitizeOutput, SanitizerReport

_RANK = {"clean": 0, "errors": 1, "failed": 2}


def check(req: SanitizeInput) -> None:
    if not req.tools:
        raise ToolFailure(
            "refused", "tools is empty: pass one or more of memcheck, racecheck, initcheck, synccheck"
        )


def run(req: SanitizeInput) -> SanitizeOutput:
    check(req)
    sanitizer = require_gpu("sanitize", req.gpu, "compute-sanitizer")
    assert sanitizer is not None
    manifest = load_for_tool(req.task_path)
    kernel = resolve_kernel(manifest, req.kernel, req.shape) if req.kernel else ""
    wreq = SanitizeWorkerRequest(
        sanitizer=sanitizer,
        tools=list(req.tools),
        kernel=kernel,
        timeout_s=req.timeout_s,
        launch=LaunchTaskRequest(task_path=manifest.path, shape=req.shape, config=req.config, seed=req.seed),
    )
    outcome = run_worker(
        "services.toolrunner.tools.sanitize.worker",
        msgspec.json.encode(wreq),
        Limits(timeout_s=req.timeout_s * len(req.tools) + 60.0, memory_mb=None, gpu=req.gpu),
    )
    if outcome.status != "ok" or outcome.result is None:
        raise ToolFailure(outcome.status if outcome.status != "ok" else "failed", outcome.message)
    res = msgspec.json.decode(outcome.result, type=SanitizeWorkerResult)
    reports: list[SanitizerReport] = []
    for r in res.runs:
        rep = parse_sanitizer_output(r.output, r.tool, r.returncode)  # type: ignore[arg-type]
        if r.timed_out:
            rep = msgspec.structs.replace(
                rep, verdict="failed", message=f"timed out after {req.timeout_s:.0f} s"
            )
        reports.append(rep)
    verdict = max((r.verdict for r in reports), key=_RANK.__getitem__)
    return SanitizeOutput(
        verdict=verdict,
        reports=reports,
        sanitizer_version=res.version,
        provenance=Provenance(
            device=f"cuda:{req.gpu}",
            method="compute-sanitizer --print-limit 20, one warm-up + one checked launch",
        ),
    )


SPEC = ToolSpec(
    name="sanitize",
    order=90,
    version="1",
    description="Run a task's kernel under compute-sanitizer memcheck and racecheck (initcheck, synccheck on "
    "request): a verdict per tool (clean / errors / failed), the error count and the first "
    "findings with kernel and source location. GPU only.",
    input=SanitizeInput,
    output=SanitizeOutput,
    run=run,
    check=check,
    needs_gpu=True,
)
