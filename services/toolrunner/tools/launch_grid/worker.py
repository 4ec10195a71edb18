"""Worker: record the grid of every launch a task's `launch()` makes, for each config, without running a
kernel. Triton: inputs live on PyTorch's meta device; `JITFunction.run` is replaced by a recorder that
evaluates the grid (a tuple, or a callable of the bound arguments, as Triton's own run does). CUDA C++:
inputs are fake CUDA tensors (torch's FakeTensorMode: shapes and a `cuda` device, no memory, no GPU) and
`torch.cuda.compile_kernel` returns a recorder of the `grid=` and `block=` the launch passes."""

from __future__ import annotations

import inspect
import math
from typing import Any

import msgspec

from services.toolrunner.worker_lib.io import read_request, write_result
from shared.messages import Scalar
from shared.tools.grid import ConfigGrid


class LaunchGridWorkerInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    configs: list[dict[str, Scalar]]  # full configs
    shape: dict[str, Scalar]


class LaunchGridWorkerResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    results: list[ConfigGrid] = []
    error: str = ""  # the task as a whole could not be recorded (e.g. make_inputs on meta)


def main() -> None:
    req = read_request(LaunchGridWorkerInput)
    from triton.runtime.jit import JITFunction

    from services.toolrunner.task_runtime import import_task, runtime_for, task_kind

    launches: list[tuple[str, list[int], list[int]]] = []

    def record(self: JITFunction, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> None:
        if warmup:
            return
        params = {k: v for k, v in kwargs.items() if k in self.arg_names}
        bound = inspect.signature(self.fn).bind_partial(*args, **params)
        bound.apply_defaults()
        g = grid(dict(bound.arguments)) if callable(grid) else grid
        dims = [int(x) for x in g] + [1] * (3 - len(g))
        launches.append((self.__name__, dims, []))

    JITFunction.run = record  # type: ignore[method-assign]
    module = import_task(req.task_path)
    rt = runtime_for(module)
    if task_kind(module) == "cuda":
        _record_cuda(launches)
        device, where = "cuda", "fake CUDA tensors (FakeTensorMode)"
    else:
        device, where = "meta", "the meta device"
    with _fake_mode(device):
        try:
            inputs = rt.make_inputs(dict(req.shape), 0, device)
        except Exception as e:  # noqa: BLE001 - user code: the error is the result
            write_result(LaunchGridWorkerResult(error=f"make_inputs on {where} raised {type(e).__name__}: {e}"))
            return
        out = []
        for cfg in req.configs:
            launches.clear()
            try:
                rt.launch(inputs, **cfg)
                out.append(
                    ConfigGrid(
                        kernels=[k for k, _, _ in launches],
                        grids=[g for _, g, _ in launches],
                        programs=[math.prod(g) for _, g, _ in launches],
                        blocks=[b for _, _, b in launches if b],
                    )
                )
            except Exception as e:  # noqa: BLE001 - user code: the error is the config's result
                out.append(ConfigGrid(error=f"launch() on {where} raised {type(e).__name__}: {e}"))
    write_result(LaunchGridWorkerResult(results=out))


def _dims(v: Any) -> list[int]:
    t = tuple(v) if isinstance(v, (tuple, list)) else (v,)
    return [int(x) for x in t] + [1] * (3 - len(t))


def _record_cuda(launches: list[tuple[str, list[int], list[int]]]) -> None:
    """torch.cuda.compile_kernel (and its older private name) returns a recorder: no NVRTC, no launch."""
    import torch

    def compile_kernel(source: str, name: str, *a: Any, **k: Any) -> Any:
        def launch(*args: Any, grid: Any = (1, 1, 1), block: Any = (1, 1, 1), **kw: Any) -> None:
            launches.append((name, _dims(grid), _dims(block)))

        return launch

    torch.cuda.compile_kernel = compile_kernel  # type: ignore[attr-defined]
    torch.cuda._compile_kernel = compile_kernel  # type: ignore[attr-defined]


def _fake_mode(device: str) -> Any:
    import contextlib

    if device != "cuda":
        return contextlib.nullcontext()
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(allow_non_fake_inputs=True)


if __name__ == "__main__":
    main()
