"""The ncu_profile tool: Nsight Compute metrics of one launch, mapped onto GPU.md's state dimensions.

GPU only. The task is loaded (sandboxed) to check the kernel and shape names, then the ncu worker runs
ncu on the task's launch; the raw CSV page it returns is parsed here (shared/parsers/ncu.py).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import msgspec

from services.toolrunner.nvtools import require_gpu
from services.toolrunner.sandbox import Limits, run_worker
from services.toolrunner.tasks import load_for_tool
from services.toolrunner.tool import ToolFailure, ToolSpec
from services.toolrunner.tools.ncu_profile.worker import NcuWorkerRequest, NcuWorkerResult
from services.toolrunner.worker_lib.launch_task import LaunchTaskRequest
from shared.messages import Provenance
from shared.parsers.ncu import (
    NcuCsvError,
    parse_ncu_csv,
    requested_metrics,
    select_kernel,
    with_dimensions,
)
from shared.tools.profile import NcuProfileInput, NcuProfileOutput
from shared.tools.task import TaskManifest


def resolve_kernel(manifest: TaskManifest, kernel: str, shape: str) -> str:
    """The kernel to profile (the task's first when ""), refusing names and shapes the task lacks."""
    try:
        manifest.shape(shape)
    except KeyError as e:
        raise ToolFailure("refused", str(e.args[0])) from None
    names = manifest.kernel_names()
    if not kernel:
        if not names:
            raise ToolFailure("refused", f"task {manifest.path} names no kernel to profile; pass `kernel`")
        return names[0]
    if names and kernel not in names:
        raise ToolFailure(
            "refused", f"kernel {kernel!r} is not in task {manifest.name}: it has {', '.join(names)}"
        )
    return kernel




def run(req: NcuProfileInput) -> NcuProfileOutput:
    ncu = require_gpu("ncu_profile", req.gpu, "ncu")
    assert ncu is not None
    manifest = load_for_tool(req.task_path)
    kernel = resolve_kernel(manifest, req.kernel, req.shape)
    report_dir = req.artifact_dir or str(Path(tempfile.gettempdir()) / "kpilot-artifacts" / "ncu")
    # The sandbox writes its report into a fresh dir of its own; this process moves it to report_dir
    # (a tool argument: never handed to the sandbox user).
    out_dir = tempfile.mkdtemp(prefix="kpilot-ncu-")
    try:
        return _profile(req, ncu, manifest, kernel, report_dir, out_dir)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def _profile(req: NcuProfileInput, ncu: str, manifest: TaskManifest, kernel: str, report_dir: str,
             out_dir: str) -> NcuProfileOutput:
    wreq = NcuWorkerRequest(
        ncu=ncu,
        kernel=kernel,
        metrics=requested_metrics(req.extra_metrics),
        report_dir=out_dir,
        timeout_s=max(30.0, req.timeout_s - 60.0),  # leave the worker time to read the report back
        launch=LaunchTaskRequest(
            task_path=manifest.path, shape=req.shape, config=req.config, seed=req.seed, profile_range=True
        ),
    )
    outcome = run_worker(
        "services.toolrunner.tools.ncu_profile.worker",
        msgspec.json.encode(wreq),
        Limits(timeout_s=req.timeout_s, memory_mb=None, gpu=req.gpu),
        writable=(out_dir,),
    )
    if outcome.status != "ok" or outcome.result is None:
        raise ToolFailure(outcome.status if outcome.status != "ok" else "failed", outcome.message)
    res = msgspec.json.decode(outcome.result, type=NcuWorkerResult)
    if not res.ok:
        raise ToolFailure("failed", res.message)
    try:
        profile = with_dimensions(select_kernel(parse_ncu_csv(res.csv), kernel))
    except NcuCsvError as e:
        raise ToolFailure("failed", str(e)) from None
    report_path = None
    if res.report_path is not None:
        Path(report_dir).mkdir(parents=True, exist_ok=True)
        report_path = shutil.move(res.report_path, Path(report_dir) / Path(res.report_path).name)
    return NcuProfileOutput(
        profile=profile,
        report_path=str(report_path) if report_path is not None else None,
        command=res.command,
        metrics_requested=res.metrics_requested,
        metrics_unavailable=res.metrics_unavailable,
        ncu_version=res.ncu_version,
        provenance=Provenance(
            device=profile.device or f"cuda:{req.gpu}",
            method="ncu --clock-control none --page raw, one launch after one warm-up launch (kernel replay)",
        ),
    )


SPEC = ToolSpec(
    name="ncu_profile",
    order=80,
    version="1",
    description="Profile one launch of a task's kernel with Nsight Compute (clocks not locked) and map the "
    "metrics onto the state dimensions (sm_active, l2/dram bandwidth, tensor pipe, sectors per "
    "request, divergence, registers, bank conflicts, stalls, occupancy); a dimension whose "
    "metric is missing is listed as absent with the reason. Keeps the .ncu-rep. GPU only.",
    input=NcuProfileInput,
    output=NcuProfileOutput,
    run=run,
    needs_gpu=True,
)
