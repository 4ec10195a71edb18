"""Worker: compile one kernel of a task for a CUDA target, with no GPU.

Triton: the task's launch() runs on meta tensors (CPU tensors if it cannot) under the compile-only
interception of triton_capture.py, and the recorded launch is compiled through Triton's own path.
CUDA C++: CUDA_SOURCE is written to the scratch directory and built by nvcc to PTX and cubin.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import traceback
from pathlib import Path

import msgspec

from services.toolrunner.worker_lib.io import read_request, write_result
from shared.messages import Scalar
from shared.parsers.ptx import entry_names


class CompileJob(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    kind: str  # "triton", "cuda", "kernelbench"
    kernel: str
    config: dict[str, Scalar]
    capability: int
    arch: str  # "sm_90a"
    shape_values: dict[str, int]


class WorkerArtifact(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kind: str
    data: bytes


class CompileWorkerResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    error: str = ""  # non-empty: the compile failed, this says why (a result, not a crash)
    artifacts: list[WorkerArtifact] = []
    kernel_names: list[str] = []
    params: list[dict[str, Scalar | None]] = []
    specialization: str = ""
    inputs_device: str = ""
    shared_bytes: int | None = None
    num_warps: int | None = None
    compile_s: float = 0.0


def _user_error(what: str, e: BaseException) -> str:
    where = traceback.extract_tb(e.__traceback__)
    frame = next(
        (f for f in reversed(where) if "kpilot_task" in f.filename or f.filename.endswith(".py")),
        where[-1] if where else None,
    )
    loc = f" (line {frame.lineno} of {frame.filename})" if frame else ""
    return f"{what} raised {type(e).__name__}: {e}{loc}"


def _compile_triton(job: CompileJob) -> CompileWorkerResult:
    import torch

    from services.toolrunner.task_runtime import import_task, runtime_for
    from services.toolrunner.tools.compile import triton_capture

    module = import_task(job.task_path)
    rt = runtime_for(module)
    tried: list[str] = []
    capture = None
    device = ""
    # Meta tensors carry shapes, strides and (offset-derived) addresses without memory: a full 8192^3 GEMM
    # specializes exactly as on the GPU, whose allocations are 256-byte aligned like meta's address 0.
    for device in ("meta", "cpu"):
        try:
            inputs = rt.make_inputs(dict(job.shape_values), 0, device)
        except Exception as e:  # noqa: BLE001 - user code
            tried.append(_user_error(f"make_inputs(shape, 0, {device!r})", e))
            continue
        with torch.no_grad():
            capture, err = triton_capture.run_launch(
                lambda x=inputs: rt.launch(x, **job.config), job.capability
            )
        if capture.launches:
            break
        if err is None and device == "cpu":
            # It ran and launched nothing: what did it return instead? That is the verdict's reason.
            return CompileWorkerResult(error=f"launch ran no Triton kernel, so there is nothing to compile: "
                                             f"{_trick(rt, inputs, job.config)}")
        tried.append(
            _user_error(f"launch on {device} inputs", err)
            if err
            else f"launch on {device} inputs called no Triton kernel"
        )
    if capture is None or not capture.launches:
        return CompileWorkerResult(error="; ".join(tried))
    kernel = job.kernel or capture.launches[0].kernel
    launch = capture.first(kernel)
    if launch is None:
        return CompileWorkerResult(
            error=f"launch() never launched kernel {kernel!r}; it launched {capture.kernel_names()}"
        )
    t0 = time.monotonic()
    try:
        compiled = triton_capture.compile_launch(launch)
    except Exception as e:  # noqa: BLE001 - a failed compile is a result
        msg = str(e).strip().splitlines()
        return CompileWorkerResult(
            error=f"Triton compile failed: {type(e).__name__}: {' | '.join(msg[-6:])}", inputs_device=device
        )
    compile_s = time.monotonic() - t0
    asm = compiled.asm
    arts = [WorkerArtifact(kind="source", data=Path(job.task_path).read_bytes())]
    for kind in ("ttir", "ttgir", "llir", "ptx", "cubin"):
        v = asm[kind]
        arts.append(WorkerArtifact(kind=kind, data=v if isinstance(v, bytes) else v.encode()))
    md = compiled.metadata
    return CompileWorkerResult(
        artifacts=arts,
        kernel_names=entry_names(asm["ptx"]) or [md.name],
        params=triton_capture.params(launch),
        specialization=launch.specialization_data,
        inputs_device=device,
        shared_bytes=int(md.shared),
        num_warps=int(md.num_warps),
        compile_s=compile_s,
    )


def _trick(rt: object, inputs: object, config: dict[str, Scalar]) -> str:
    """Name what a launch that ran no Triton kernel returned (services/toolrunner/tricks.py)."""
    import torch

    from services.toolrunner.tricks import name_trick, op_recorder
    from services.toolrunner.worker_lib.tensors import output_tensors

    try:
        with torch.no_grad():
            ref_rec = op_recorder()
            with ref_rec:
                rt.reference(inputs)  # type: ignore[attr-defined]
            rec = op_recorder()
            with rec:
                value = rt.launch(inputs, **config)  # type: ignore[attr-defined]
    except Exception as e:  # noqa: BLE001 - user code: fall back to the plain statement
        return f"its output could not be examined ({_user_error('launch', e)})"
    tensors = output_tensors(value) or []
    arrays = [t.detach().float().cpu().numpy() for t in tensors if isinstance(t, torch.Tensor)]
    return name_trick(arrays, rec.ops, ref_rec.ops, rec.raw)


def _nvcc(args: list[str]) -> str:
    proc = subprocess.run(args, check=False, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError((proc.stderr or proc.stdout).strip()[-3000:])
    return proc.stderr


def _compile_cuda(job: CompileJob) -> CompileWorkerResult:
    from services.toolrunner.task_runtime import import_task

    module = import_task(job.task_path)
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return CompileWorkerResult(
            error="nvcc not found on PATH: install the CUDA toolkit (CUDA 12.4+ for "
            "sm_90a) or put its bin/ on PATH"
        )
    scratch = Path(os.environ.get("KPILOT_SCRATCH", "."))
    src = scratch / f"{job.kernel}.cu"
    src.write_text(module.CUDA_SOURCE)
    # CONFIG entries become macros so a source can use tile sizes as compile-time constants.
    defines = [f"-D{k}={int(v) if isinstance(v, bool) else v}" for k, v in job.config.items()]
    # -lineinfo keeps source lines for ncu/nvdisasm correlation and does not change the generated code.
    base = [nvcc, f"-arch={job.arch}", "-lineinfo", *defines]
    t0 = time.monotonic()
    try:
        _nvcc([*base, "-ptx", str(src), "-o", str(scratch / "k.ptx")])
        _nvcc([*base, "-cubin", str(src), "-o", str(scratch / "k.cubin")])
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        return CompileWorkerResult(error=f"nvcc failed: {e}")
    compile_s = time.monotonic() - t0
    ptx = (scratch / "k.ptx").read_text()
    names = entry_names(ptx)
    if job.kernel not in names:
        return CompileWorkerResult(
            error=f"nvcc built no entry {job.kernel!r} (found {names}); declare it "
            f'extern "C" __global__ so its name is not C++-mangled'
        )
    arts = [
        WorkerArtifact(kind="source", data=module.CUDA_SOURCE.encode()),
        WorkerArtifact(kind="ptx", data=ptx.encode()),
        WorkerArtifact(kind="cubin", data=(scratch / "k.cubin").read_bytes()),
    ]
    return CompileWorkerResult(artifacts=arts, kernel_names=names, compile_s=compile_s)


def main() -> None:
    job = read_request(CompileJob)
    try:
        result = _compile_cuda(job) if job.kind == "cuda" else _compile_triton(job)
    except Exception as e:  # noqa: BLE001 - importing the task failed: report it
        result = CompileWorkerResult(error=_user_error("the task", e))
    write_result(result)


if __name__ == "__main__":
    main()
