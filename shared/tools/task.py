"""The kernel task manifest: what `load_task` learns about a task file without importing it in the caller.

A task file (examples/README.md) is Python the user wrote; the loader imports it only inside a sandboxed
worker and returns this record, which every other tool and service works from.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from shared.messages import Scalar

TaskKind = Literal["triton", "cuda", "kernelbench"]
Dtype = Literal["float32", "float16", "bfloat16"]
# "exact": fp32 stays fp32 (no tf32 in dots); "allow_tf32": fp32 dots may use tf32 (10-bit mantissa).
Precision = Literal["exact", "allow_tf32"]

Shape = dict[str, int]
"""A named problem size, e.g. {"n": 1000003} or {"m": 8192, "n": 8192, "k": 8192}."""


class Tolerance(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """`torch.allclose(out, ref, atol=atol, rtol=rtol)` bounds for one dtype."""

    atol: float
    rtol: float


class TaskShapes(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    micro: Shape  # small enough for Triton's CPU interpreter in seconds
    full: Shape  # the size that is benchmarked
    edge: list[Shape] = []  # odd sizes (not multiples of any block) the candidate was never tuned on


class KernelInfo(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One kernel of a task: its name and, for Triton, its parameters in order."""

    name: str
    params: list[str] = []
    constexprs: list[str] = []  # the subset of `params` annotated `tl.constexpr`


class ShapeCost(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The task's own FLOP and byte formulas evaluated at one named shape (roofline inputs)."""

    shape_name: str  # "micro", "full", "edge:0", ...
    shape: Shape
    flops: float
    bytes_moved: float


ConstraintStatus = Literal["complete", "over_cap", "timed_out"]


class ConstraintTable(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The task's `constraint(config, shape)` evaluated by load_task (in the sandbox) on every config of
    SPACE, so that services which never run task code (the planner) can leave out the configs it refuses.

    A config is refused when `constraint` does not return True on one of `shapes` (the ones the loader
    checks the starting CONFIG on), and also when it raises there or returns a non-bool. Configs are
    numbered in SPACE's own order: itertools.product over `keys` (the last key varies fastest) for a
    cross product, the listed order for a list SPACE (shared/space_list.py points: duplicates once). Only
    a "complete" table has `refused_bits`; above the cap or the time limit nothing is judged (status
    says which, `configs` is the space's size) and the planner proposes as it did without the table.
    shared/constraint_table.py builds and reads it.
    """

    status: ConstraintStatus
    shapes: list[str]  # the named shapes each config was judged on, e.g. ["micro", "full"]
    keys: list[str]  # SPACE's keys in product order
    configs: int  # configs in SPACE
    refused: int = 0
    raised: int = 0  # of the refused, those where constraint raised or returned a non-bool
    refused_bits: bytes = b""  # bit i % 8 of byte i // 8 set = config i refused; b"" unless complete
    note: str = ""  # e.g. the first exception constraint raised, with its config and shape


class TaskManifest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    path: str  # absolute path of the task file
    sha256: str  # of the file's bytes: a change of source is a new task version
    kind: TaskKind
    name: str  # the file's stem
    kernels: list[KernelInfo]  # first = primary; empty for a KernelBench problem without ModelNew
    config: dict[str, Scalar] = {}  # the untuned starting point (constexprs + num_warps/num_stages/...)
    # SPACE as key -> allowed values (a cross product); for a SPACE given as a list of configs
    # (autotune-style, shared/space_list.py) each key's listed values, with the entries in space_configs.
    space: dict[str, list[Scalar]] = {}
    space_configs: list[dict[str, Scalar]] = []  # a list SPACE's entries (merged over config); [] = product
    has_constraint: bool = False
    # constraint() over SPACE (None: no constraint, or no SPACE to judge)
    constraint_table: ConstraintTable | None = None
    # INPLACE: indices into make_inputs()'s tuple that launch() writes; their values after the call are
    # outputs, and the tools restore them between calls (examples/README.md, "In-place outputs").
    inplace: list[int] = []
    shapes: TaskShapes
    dtype: Dtype
    # The dtype CPU correctness runs in: Triton's interpreter cannot do bf16, so a bf16 task's CPU twin
    # runs in float16 or float32 (make_inputs honours `shape["dtype"]`, see examples/README.md).
    cpu_dtype: Dtype
    tolerance: dict[str, Tolerance]  # keyed by dtype name
    precision: Precision
    costs: list[ShapeCost] = []  # one per named shape; empty when the task has no formulas (KernelBench)
    cuda_source_sha256: str = ""  # CUDA tasks: hash of CUDA_SOURCE
    # CUDA tasks: the task-file line where the CUDA_SOURCE literal opens (= line 1 of the compiled .cu copy);
    # 0 when unknown. Maps a PTX/SASS line back into the task.
    cuda_source_line: int = 0
    has_candidate: bool = False  # KernelBench: the file defines ModelNew
    notes: list[str] = []  # non-fatal remarks, e.g. "KernelBench: no FLOP formula"

    @property
    def primary(self) -> str:
        return self.kernels[0].name if self.kernels else ""

    def configs_listed(self) -> list[dict[str, Scalar]]:
        """The full configs a list SPACE allows (each entry over CONFIG); [] for a cross product."""
        from shared.space_list import points

        return points(self.config, self.space_configs)

    def kernel_names(self) -> list[str]:
        return [k.name for k in self.kernels]

    def shape(self, name: str) -> Shape:
        """A named shape: "micro", "full" or "edge:<i>"."""
        if name in ("micro", "full"):
            return getattr(self.shapes, name)
        if name.startswith("edge:") and name[5:].isdigit() and int(name[5:]) < len(self.shapes.edge):
            return self.shapes.edge[int(name[5:])]
        known = ["micro", "full"] + [f"edge:{i}" for i in range(len(self.shapes.edge))]
        raise KeyError(f"unknown shape {name!r}: this task has {', '.join(known)}")


class LoadTaskInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    path: str
