"""Triton's interpreter (TRITON_INTERPRET=1) made to run two things compiled Triton runs.

Float scalars. 
Compiled Triton passes a Python float argument as an fp32 scalar (`mangle_type(1.0) == "fp32"`), so kernel
code may call tensor methods on it: `eps = eps.to(tl.float32)` (liger-kernel's norms, any kernel pinning a
scalar's precision). Triton 3.6's interpreter converts int and pointer arguments to `tl.tensor`s but hands a
float over as a bare Python float (triton/runtime/interpreter.py `_implicit_cvt`), so the same line raises
"'float' object has no attribute 'to'" on CPU only. `float_scalars_as_fp32()` wraps that conversion: a
float becomes a one-element fp32 tensor, what the compiled kernel sees; everything else is unchanged.

libdevice. `triton.language.extra.libdevice` is a module of stubs (`def rsqrt(arg0): ...`) that the
compiler resolves to the backend's library; the interpreter never patches it, so `rsqrt(x)` imported from
it returns None on CPU and the kernel fails later ("cannot convert None ... to tensor" at a store). Each
stub with a `tl.math` namesake (rsqrt, exp, sqrt, fma, erf, ...: the same elementwise function) is
replaced by a call of that namesake, looked up at call time so the interpreter's own patch of `tl.math`
applies; the others stay stubs. This must run before the kernel's module imports from libdevice.
Installed where kernelpilot runs the interpreter: the capture hook (in the user's program) and
`import_task` (in every sandboxed worker that imports a task or a candidate).
"""

from __future__ import annotations

from typing import Any

_PATCHED: list[Any] = []


def float_scalars_as_fp32() -> bool:
    """Installs both wrappers once per process when the interpreter is on; returns whether they are in."""
    import triton

    if not triton.knobs.runtime.interpret:
        return False
    if _PATCHED:
        return True
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    orig = interpreter._implicit_cvt

    def implicit_cvt(arg: Any) -> Any:
        if isinstance(arg, float):
            return tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
        return orig(arg)

    interpreter._implicit_cvt = implicit_cvt
    _PATCHED.append(orig)
    _libdevice_as_math()
    return True


def _libdevice_as_math() -> None:
    import inspect

    import triton.language as tl
    from triton.language.extra import libdevice

    for name, stub in list(vars(libdevice).items()):
        if not inspect.isfunction(stub) or stub.__module__ != libdevice.__name__ or not hasattr(tl.math, name):
            continue

        def call(*args: Any, _name: str = name, **kwargs: Any) -> Any:
            return getattr(tl.math, _name)(*args, **kwargs)

        call.__name__ = call.__qualname__ = name
        call.__module__ = libdevice.__name__  # a captured task imports it from where the kernel did
        setattr(libdevice, name, call)
