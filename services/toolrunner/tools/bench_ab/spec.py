"""The bench_ab tool: baseline and candidate timed interleaved (ABBA) in one process, with a bootstrap CI.

GPU only. Accept a gain only when `ci_low` > 1 + min_gain (GPU.md "Timing method"); that decision is the
verifier's, this tool reports the samples and the interval.
"""

from __future__ import annotations

import msgspec

from services.toolrunner.nvtools import require_gpu
from services.toolrunner.tasks import load_for_tool
from services.toolrunner.tool import ToolFailure, ToolSpec
from services.toolrunner.tools.bench.spec import check_task, run_bench_worker
from services.toolrunner.tools.bench.worker import BenchJob
from shared.tools.bench import BenchABInput, BenchABOutput


def check(req: BenchABInput) -> None:
    if req.warmup_ms <= 0 or req.rep_ms <= 0:
        raise ToolFailure("refused", "warmup_ms and rep_ms must be > 0 (do_bench uses 25 and 100)")
    if req.n_bootstrap < 100:
        raise ToolFailure("refused", f"n_bootstrap={req.n_bootstrap}: use at least 100 (2000 is the default)")


def run(req: BenchABInput) -> BenchABOutput:
    check(req)
    require_gpu("bench_ab", req.gpu)
    sides = []
    for side in (req.a, req.b):
        manifest = load_for_tool(side.task_path)
        check_task(manifest, req.shape, side.config)
        sides.append(msgspec.structs.replace(side, task_path=manifest.path))
    req = msgspec.structs.replace(req, a=sides[0], b=sides[1])
    return msgspec.json.decode(
        run_bench_worker(BenchJob(kind="ab", ab=req), req.gpu, req.timeout_s), type=BenchABOutput
    )


SPEC = ToolSpec(
    name="bench_ab",
    order=70,
    version="1",
    description="Time a baseline (a) and a candidate (b) interleaved ABBA in one process by the bench "
    "method; "
    "returns both sample lists, their statistics and median(a)/median(b) with a 95 % bootstrap "
    "interval (> 1 means b is faster). GPU only.",
    input=BenchABInput,
    output=BenchABOutput,
    run=run,
    check=check,
    needs_gpu=True,
)
