"""What the capture hook records (written by the user's program, read by `kpilot capture`)."""

from __future__ import annotations

import msgspec

Scalar = int | float | str | bool | None


class ArgSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One kernel argument at a launch: a tensor's metadata or a scalar's value."""

    name: str
    kind: str  # "tensor" | "scalar" | "constexpr"
    value: Scalar = None  # scalars and constexprs
    shape: list[int] = []
    stride: list[int] = []
    dtype: str = ""  # torch dtype name, e.g. "float32"
    device: str = ""
    written: bool = False  # the launch changed its values (an output, or in place)
    int_range: list[int] = []  # [min, max] of an integer tensor, for re-creating it
    saved: str = ""  # file name (next to the raw record) holding its values before the launch
    alias_of: str = ""  # an earlier tensor argument that is the same tensor (e.g. in place: f(x, x))


class Variant(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Launches of one kernel with the same argument metadata, constexprs and launch options."""

    args: list[ArgSpec]
    options: dict[str, int]  # num_warps, num_stages (Triton's CUDA defaults when not passed)
    grid: list[int]
    calls: int = 0
    elements: int = 0  # sum of the tensor arguments' numel, per call
    gpu_ms: float | None = None  # total over the calls (CUDA events); None: not measured


class KernelSource(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A kernel's source with what it needs to run outside its module."""

    name: str
    functions: list[list[str]]  # [name, source of the def without decorators]; the kernel first
    preamble: list[str]  # import lines and constants the functions refer to
    problems: list[str] = []  # globals that could not be carried over


class KernelRecord(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str
    file: str
    line: int
    params: list[str]
    constexprs: list[str]
    source: KernelSource
    autotune_configs: list[dict[str, int | float | str | bool]] = []
    variants: list[Variant] = []


class Capture(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    command: list[str]
    timing: str  # "cuda events" or "not measured: no GPU"
    kernels: list[KernelRecord] = []
