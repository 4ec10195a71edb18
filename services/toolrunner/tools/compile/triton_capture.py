"""Learn how Triton would specialize a kernel launch, with no GPU, by running the task's own launch().

Worker-side only. Triton's JIT (triton/runtime/jit.py, 3.6.0) binds a launch's arguments and computes the
specialization itself (`create_function_from_signature` -> `native_specialize_impl`: argument types,
`tt.divisibility = 16` for 16-byte aligned pointers and ints divisible by 16, ints equal to 1 become
constants), then calls `knobs.runtime.jit_cache_hook` before compiling; a hook returning True skips
the compile and the launch. We install a driver that reports the compile target (so Triton builds the
binder and backend for it without CUDA) and such a hook, call launch() on meta or CPU tensors, and keep
what Triton computed: its serialized specialization data, which `JITFunction.preload` compiles.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Launch:
    kernel: str  # the JIT function's __name__
    jit_function: Any  # triton.runtime.jit.JITFunction
    specialization_data: str  # Triton's JSON (serialize_specialization_data)


@dataclass
class Capture:
    launches: list[Launch] = field(default_factory=list)

    def first(self, kernel: str) -> Launch | None:
        return next((x for x in self.launches if x.kernel == kernel), None)

    def kernel_names(self) -> list[str]:
        return list(dict.fromkeys(x.kernel for x in self.launches))


def _compile_only_driver(capability: int) -> Any:
    import torch
    from triton.backends.compiler import GPUTarget
    from triton.backends.driver import DriverBase

    class CompileOnlyDriver(DriverBase):
        """Answers what the JIT asks before compiling; nothing is ever launched with it."""

        @classmethod
        def is_active(cls) -> bool:
            return False

        def map_python_to_cpp_type(self, ty: str) -> str:
            raise NotImplementedError("compile-only driver: no launcher")

        def get_current_target(self) -> Any:
            return GPUTarget("cuda", capability, 32)

        def get_active_torch_device(self) -> Any:
            return torch.device("cpu")

        def get_benchmarker(self) -> Any:
            raise NotImplementedError("compile-only driver: nothing runs")

        def get_current_device(self) -> int:
            return 0

        def get_current_stream(self, device: int | None = None) -> int:
            return 0

    return CompileOnlyDriver()


@contextlib.contextmanager
def compile_only(capability: int) -> Iterator[Capture]:
    """Within this block, Triton kernel launches are recorded (first and later calls) and not run."""
    from triton import knobs
    from triton.runtime.driver import driver

    capture = Capture()

    def hook(
        *,
        key: Any,
        repr: str,
        fn: Any,
        compile: dict[str, Any],
        is_manual_warmup: bool,
        already_compiled: bool,
    ) -> bool:
        capture.launches.append(
            Launch(
                kernel=fn.jit_function.__name__,
                jit_function=fn.jit_function,
                specialization_data=compile["specialization_data"],
            )
        )
        return True  # skip compile and launch

    previous, previous_driver = knobs.runtime.jit_cache_hook, driver._active  # _active: no CUDA default
    driver.set_active(_compile_only_driver(capability))
    knobs.runtime.jit_cache_hook = hook
    try:
        yield capture
    finally:
        knobs.runtime.jit_cache_hook = previous
        driver._active = previous_driver


def run_launch(launch: Callable[[], Any], capability: int) -> tuple[Capture, BaseException | None]:
    """Call `launch` under `compile_only`; an exception after the launches were seen is returned, not
    raised (meta tensors cannot be read back, and nothing was computed anyway)."""
    with compile_only(capability) as capture:
        try:
            launch()
        except Exception as e:  # noqa: BLE001 - user code
            return capture, e
    return capture, None


def compile_launch(launch: Launch) -> Any:
    """Compile a recorded launch with Triton's own replay path (`JITFunction.preload`); the compile-only
    driver answers the target. Returns Triton's CompiledKernel (its .asm has ttir ... cubin)."""
    from triton.runtime.driver import driver

    capability = json.loads(launch.specialization_data)["options"]["arch"].removeprefix("sm")
    previous_driver = driver._active
    driver.set_active(_compile_only_driver(int(capability)))
    try:
        return launch.jit_function.preload(launch.specialization_data)
    finally:
        driver._active = previous_driver


def params(launch: Launch) -> list[dict[str, Any]]:
    """Parameter name, type, value and divisibility as Triton specialized them."""
    data = json.loads(launch.specialization_data)
    names = list(data["signature"])
    constants = {tuple(k): v for k, v in zip(data["constant_keys"], data["constant_vals"])}
    attrs = {tuple(k): v for k, v in zip(data["attrs_keys"], data["attrs_vals"])}
    out = []
    for i, name in enumerate(names):
        value = constants.get((i,))
        if isinstance(value, dict) and "constexpr" in value:
            value = value["constexpr"]
        div = any(a == ["tt.divisibility", 16] for a in attrs.get((i,), []))
        out.append(
            {
                "name": name,
                "type": str(data["signature"][name]),
                "value": value if isinstance(value, (bool, int, float, str)) else None,
                "divisible_by_16": div,
            }
        )
    return out
