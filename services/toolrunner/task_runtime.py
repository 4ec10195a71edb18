"""Import a task file and give it one calling convention, whatever its kind. Worker-side only.

Only sandboxed workers (tools/<name>/worker.py, worker_lib/) import this module's callers' task files: a
task is user code. `TaskRuntime` gives Triton, CUDA C++ and KernelBench tasks the same three calls, so the
correctness, timing and compile workers need not care which kind they hold.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

# KernelBench builds reference and candidate models under the same seed so their parameters match
# (KernelBench src/kernelbench/eval.py seeds 42 before each construction).
KERNELBENCH_INIT_SEED = 42


def import_task(path: str | Path) -> ModuleType:
    """Import a task file under a private module name (so two tasks with one stem do not collide)."""
    from shared.triton_interpreter import float_scalars_as_fp32

    float_scalars_as_fp32()  # under TRITON_INTERPRET=1, float arguments are fp32 scalars as on the GPU
    path = Path(path).resolve()
    name = f"kpilot_task_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Triton's JIT and dataclasses look modules up by name
    spec.loader.exec_module(module)
    return module


def task_kind(module: ModuleType) -> str | None:
    if hasattr(module, "KERNELS"):
        return "triton"
    if hasattr(module, "CUDA_SOURCE"):
        return "cuda"
    if hasattr(module, "Model"):
        return "kernelbench"
    return None


@dataclass(frozen=True)
class TaskRuntime:
    make_inputs: Callable[[dict[str, Any], int, str], tuple[Any, ...]]
    launch: Callable[..., Any]
    reference: Callable[[tuple[Any, ...]], Any]


def runtime_for(module: ModuleType) -> TaskRuntime:
    if task_kind(module) != "kernelbench":
        return TaskRuntime(make_inputs=module.make_inputs, launch=module.launch, reference=module.reference)
    return _kernelbench_runtime(module)


def _kernelbench_runtime(module: ModuleType) -> TaskRuntime:
    import torch

    def build(cls: type) -> Any:
        torch.manual_seed(KERNELBENCH_INIT_SEED)
        return cls(*module.get_init_inputs())

    def make_inputs(shape: dict[str, Any], seed: int, device: str) -> tuple[Any, ...]:
        torch.manual_seed(seed)
        dtype = getattr(torch, shape["dtype"]) if "dtype" in shape else None
        out = []
        for x in module.get_inputs():
            if isinstance(x, torch.Tensor):
                x = x.to(device=device, dtype=dtype if dtype is not None and x.is_floating_point() else None)
            out.append(x)
        return tuple(out)

    def _device_of(inputs: tuple[Any, ...]) -> Any:
        return next((x.device for x in inputs if isinstance(x, torch.Tensor)), "cpu")

    def reference(inputs: tuple[Any, ...]) -> Any:
        with torch.no_grad():
            return build(module.Model).to(_device_of(inputs))(*inputs)

    def launch(inputs: tuple[Any, ...], **config: Any) -> Any:
        if not hasattr(module, "ModelNew"):
            raise AttributeError("this KernelBench file has no ModelNew (the candidate) to launch")
        with torch.no_grad():
            return build(module.ModelNew).to(_device_of(inputs))(*inputs)

    return TaskRuntime(make_inputs=make_inputs, launch=launch, reference=reference)
