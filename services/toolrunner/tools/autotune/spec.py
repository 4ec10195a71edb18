"""The autotune tool: every config of a task's space timed by Triton's autotuner method. GPU only.

A failed config (out of resources, compile-time assertion, ptxas error, or any launch error) is a result
with `median_ms = None` and the error: Triton's autotuner gives it inf, which JSON cannot carry.
"""

from __future__ import annotations

import msgspec

from services.toolrunner.nvtools import require_gpu
from services.toolrunner.sandbox import Limits, run_worker
from services.toolrunner.tasks import load_for_tool
from services.toolrunner.tool import ToolFailure, ToolSpec
from services.toolrunner.tools.bench.spec import check_task
from shared.tools.bench import AutotuneInput, AutotuneOutput


def check(req: AutotuneInput) -> None:
    if req.max_configs < 1:
        raise ToolFailure("refused", f"max_configs={req.max_configs}: must be >= 1")
    if req.warmup_ms <= 0 or req.rep_ms <= 0:
        raise ToolFailure("refused", "warmup_ms and rep_ms must be > 0 (do_bench uses 25 and 100)")


def run(req: AutotuneInput, *, env: tuple[tuple[str, str], ...] = ()) -> AutotuneOutput:
    """`env`: extra worker variables for in-process callers (exhaustive.py's shared TRITON_CACHE_DIR);
    not part of the tool's input, so a request over the bus cannot set them."""
    check(req)
    require_gpu("autotune", req.gpu)
    manifest = load_for_tool(req.task_path)
    for cfg in req.configs:
        check_task(manifest, req.shape, cfg)
    if not req.configs:
        check_task(manifest, req.shape, {})
        if not manifest.space:
            raise ToolFailure(
                "refused",
                f"task {manifest.name} has no SPACE and no configs were given: pass "
                "`configs` or add SPACE to the task",
            )
    req = msgspec.structs.replace(req, task_path=manifest.path)
    outcome = run_worker(
        "services.toolrunner.tools.autotune.worker",
        msgspec.json.encode(req),
        Limits(timeout_s=req.timeout_s, memory_mb=None, gpu=req.gpu, env=env),
    )
    if outcome.status != "ok" or outcome.result is None:
        raise ToolFailure(outcome.status if outcome.status != "ok" else "failed", outcome.message)
    return msgspec.json.decode(outcome.result, type=AutotuneOutput)


SPEC = ToolSpec(
    name="autotune",
    order=110,
    version="1",
    description="Time every config of a task's SPACE (or the given configs) with Triton's autotuner method "
    "(do_bench, quantiles 0.5/0.2/0.8); failed configs are kept with their error (inf in "
    "Triton). Returns every config's timing and the best. GPU only.",
    input=AutotuneInput,
    output=AutotuneOutput,
    run=run,
    check=check,
    needs_gpu=True,
)
