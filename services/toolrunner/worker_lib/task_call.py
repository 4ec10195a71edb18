"""Worker-side: import a task and build the zero-argument call the GPU workers time, profile or check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from services.toolrunner.task_runtime import TaskRuntime, import_task, runtime_for
from services.toolrunner.worker_lib.tensors import inplace_problem


def resolve_shape(module: ModuleType, name: str) -> dict[str, Any]:
    """SHAPES[name] for "micro"/"full", SHAPES["edge"][i] for "edge:<i>" (TaskManifest.shape's rule)."""
    shapes = getattr(module, "SHAPES", None)
    if not isinstance(shapes, dict):
        raise KeyError("the task has no SHAPES dict")
    if name in ("micro", "full") and name in shapes:
        return dict(shapes[name])
    edge = shapes.get("edge", [])
    if name.startswith("edge:") and name[5:].isdigit() and int(name[5:]) < len(edge):
        return dict(edge[int(name[5:])])
    known = [k for k in ("micro", "full") if k in shapes] + [f"edge:{i}" for i in range(len(edge))]
    raise KeyError(f"unknown shape {name!r}: this task has {', '.join(known)}")


@dataclass
class TaskCall:
    module: ModuleType
    runtime: TaskRuntime
    shape: dict[str, Any]
    config: dict[str, Any]
    inputs: tuple[Any, ...]
    inplace: tuple[int, ...] = ()  # the task's INPLACE: inputs launch() writes
    originals: tuple[Any, ...] = ()  # their values as make_inputs built them, one per INPLACE index

    def restore(self) -> None:
        """Put the INPLACE inputs back to make_inputs' values (the timing calls this before every timed
        call, outside the events, so the task need not clone inside launch and time the clone)."""
        for i, saved in zip(self.inplace, self.originals):
            self.inputs[i].copy_(saved)

    def __call__(self) -> Any:
        return self.runtime.launch(self.inputs, **self.config)

    def with_config(self, overrides: dict[str, Any]) -> Callable[[], Any]:
        config = {**self.config, **overrides}
        return lambda: self.runtime.launch(self.inputs, **config)

    def flops(self) -> float | None:
        f = getattr(self.module, "flops", None)
        return float(f(self.shape)) if callable(f) else None

    def bytes_moved(self) -> float | None:
        f = getattr(self.module, "bytes_moved", None)
        return float(f(self.shape)) if callable(f) else None


def prepare(
    task_path: str, shape_name: str, config: dict[str, Any], seed: int, device: str = "cuda"
) -> TaskCall:
    module = import_task(task_path)
    runtime = runtime_for(module)
    shape = resolve_shape(module, shape_name)
    base = dict(getattr(module, "CONFIG", {}) or {})
    unknown = sorted(set(config) - set(base)) if base else []
    if unknown:
        raise KeyError(f"config keys {unknown} are not in the task's CONFIG (it has {sorted(base)})")
    inputs = runtime.make_inputs(shape, seed, device)
    inplace = tuple(getattr(module, "INPLACE", ()) or ())
    if why := inplace_problem(inplace, inputs):
        raise ValueError(f"{why}; fix INPLACE in {task_path}")
    return TaskCall(module=module, runtime=runtime, shape=shape, config={**base, **config}, inputs=inputs,
                    inplace=inplace, originals=tuple(inputs[i].clone() for i in inplace))
