"""Records of the `mem_access_profile` tool: global memory coalescing per memory instruction, on CPU.

The kernel runs in Triton's interpreter, which reveals the address of every element each `tl.load` /
`tl.store` touches; the compiled kernel's TTGIR layout (for cuda:90) says which lane of which warp holds
each element, and its PTX how many bytes a lane moves per instruction. Together they give, per source
line, the numbers ncu reports as l1tex__t_sectors / l1tex__t_requests for global loads and stores,
without a GPU. It is a model of the access pattern, not a measurement: caches and replays are not in it.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from shared.messages import Scalar

AccessKind = Literal["load", "store", "async_copy", "atomic"]


class MemAccessInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    config: dict[str, Scalar] = {}  # overrides of the task's CONFIG
    shape: str = "micro"  # a named shape of the task: "micro", "full", "edge:<i>"
    seed: int = 0
    kernel: str | None = None  # profile only this kernel (default: every kernel the launch runs)
    # Programs whose accesses are analysed, spread evenly over the grid and always including the first
    # and the last (the tail block is where masks bite). Every program still runs.
    max_programs: int = 256
    timeout_s: float = 600.0


class MemInstruction(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kind: AccessKind
    file: str
    line: int
    column: int  # of the op in TTGIR (0-based; tells two accesses on one line apart)
    source: str  # the call's source lines, stripped and joined
    dtype: str  # TTGIR element type, e.g. "f32"
    elem_bytes: int
    tensor_shape: list[int]  # [] for a scalar pointer
    layout: str  # "sizePerThread=[4] threadsPerWarp=[32] warpsPerCTA=[4] order=[0]", or why none
    vector_bytes: int  # bytes one lane moves per instruction (PTX width: ld.global.v4.b32 = 16)
    vector_source: str  # "ptx" or "layout" (no PTX instruction matched the source location)
    executions: int  # over the analysed programs
    requests: int  # warp-level requests with at least one active lane
    sectors: int  # 32 B sectors those requests touch
    sectors_per_request: float | None  # None when no request had an active lane
    ideal_sectors_per_request: float | None  # if the same bytes were perfectly packed
    bytes_per_sector: float | None  # bytes the lanes asked for per sector fetched (32 = all used)
    active_lanes_per_request: float | None
    note: str = ""


class KernelMemProfile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kernel: str
    launch_index: int  # order among the launches `launch()` made
    grid: list[int]
    num_warps: int
    programs_total: int
    programs_analysed: int
    instructions: list[MemInstruction]
    load_requests: int  # sums over the kernel's loads (async copies excluded: ncu counts them apart)
    load_sectors: int
    store_requests: int
    store_sectors: int
    load_sectors_per_request: float | None
    store_sectors_per_request: float | None


class MemAccessOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task: str
    shape_name: str
    shape: dict[str, Scalar]
    config: dict[str, Scalar]
    target: str  # the layout's target, "cuda:90"
    kernels: list[KernelMemProfile]
    method: str  # how the numbers were obtained, in one sentence
    notes: list[str] = []
