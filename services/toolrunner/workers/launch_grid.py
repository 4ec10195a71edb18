"""Worker: record the grid of every Triton launch a task's `launch()` makes, for each config, without
running a kernel. Inputs live on PyTorch's meta device; `JITFunction.run` is replaced by a recorder that
evaluates the grid (a tuple, or a callable of the bound arguments, as Triton's own run does)."""

from __future__ import annotations

import inspect
import math
from typing import Any

import msgspec

from services.toolrunner.workers._io import read_request, write_result
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

    from services.toolrunner.task_runtime import import_task, runtime_for

    launches: list[tuple[str, list[int]]] = []

    def record(self: JITFunction, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> None:
        if warmup:
            return
        params = {k: v for k, v in kwargs.items() if k in self.arg_names}
        bound = inspect.signature(self.fn).bind_partial(*args, **params)
        bound.apply_defaults()
        g = grid(dict(bound.arguments)) if callable(grid) else grid
        dims = [int(x) for x in g] + [1] * (3 - len(g))
        launches.append((self.__name__, dims))

    JITFunction.run = record  # type: ignore[method-assign]
    rt = runtime_for(import_task(req.task_path))
    try:
        inputs = rt.make_inputs(dict(req.shape), 0, "meta")
    except Exception as e:  # noqa: BLE001 - user code: the error is the result
        write_result(
            LaunchGridWorkerResult(error=f"make_inputs on the meta device raised {type(e).__name__}: {e}")
        )
        return
    out = []
    for cfg in req.configs:
        launches.clear()
        try:
            rt.launch(inputs, **cfg)
            out.append(
                ConfigGrid(
                    kernels=[k for k, _ in launches],
                    grids=[g for _, g in launches],
                    programs=[math.prod(g) for _, g in launches],
                )
            )
        except Exception as e:  # noqa: BLE001 - user code: the error is the config's result
            out.append(ConfigGrid(error=f"launch() on the meta device raised {type(e).__name__}: {e}"))
    write_result(LaunchGridWorkerResult(results=out))


if __name__ == "__main__":
    main()
