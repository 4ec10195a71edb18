"""Records of the `run_correctness` tool: a candidate's outputs against the task's reference.

The candidate is either the task itself under another config (`config`) or a candidate task file of the
same format (`candidate_path`). Candidate and reference run in separate sandboxed processes, the
candidate first, so it never sees the reference output; the comparison happens in the runner.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from shared.messages import Scalar

Device = Literal["auto", "cpu", "cuda"]
CaseStatus = Literal["pass", "fail", "error", "not_checked"]
SideStatus = Literal["ok", "failed", "timeout", "crashed", "out_of_memory"]


class RunCorrectnessInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str  # the task file: its make_inputs, reference, SHAPES and TOLERANCE are the contract
    candidate_path: str | None = None  # a candidate task file (same format); None = the task itself
    config: dict[str, Scalar] = {}  # overrides of the candidate's CONFIG, e.g. {"BLOCK": 256}
    # "micro", "full", "edge" (every edge shape) or "edge:<i>"
    shapes: list[str] = msgspec.field(default_factory=lambda: ["micro", "edge"])
    seeds: list[int] = msgspec.field(default_factory=lambda: [0, 1, 2])
    # "auto": the GPU when one is present, else Triton's interpreter on CPU tensors
    device: Device = "auto"
    timeout_s: float = 600.0  # per side (candidate, reference), all cases together


class OutputComparison(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One output tensor of one case: candidate against reference under `allclose(atol, rtol)`."""

    index: int  # position in the returned tuple (0 for a single tensor)
    shape: list[int]
    dtype: str  # the reference's dtype
    candidate_shape: list[int]
    candidate_dtype: str
    numel: int
    atol: float
    rtol: float
    max_abs_err: float | None  # over elements finite in both; None when there are none
    max_rel_err: float | None  # |c - r| / |r| over finite pairs with r != 0
    mismatches: int  # elements outside atol + rtol * |ref| (NaN/Inf count unless both agree)
    first_mismatches: list[list[int]] = []  # up to 5 multi-indices, row-major order
    nan_candidate: int = 0
    inf_candidate: int = 0
    nan_reference: int = 0
    inf_reference: int = 0
    passed: bool
    reason: str = ""  # why it failed when it is not a value mismatch (shape or dtype differs)


class CaseResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    shape_name: str  # "micro", "edge:0", ...
    shape: dict[str, Scalar]  # as run (with "dtype" when a CPU twin ran)
    seed: int
    dtype: str  # the input dtype actually run
    status: CaseStatus
    outputs: list[OutputComparison] = []
    reason: str = ""  # for fail/error/not_checked: what happened, in one line
    candidate_modified_inputs: bool = False  # the candidate wrote into its inputs
    candidate_s: float | None = None  # wall seconds of the candidate's launch (interpreter: not timing)


class RunCorrectnessOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    passed: bool  # every case passed (not_checked cases do not count as passed)
    device: str  # "cpu (Triton interpreter)" or "cuda:<name>"
    config: dict[str, Scalar]  # the candidate's full config as launched
    cases: list[CaseResult]
    candidate_status: SideStatus  # how the candidate's process ended
    candidate_message: str = ""  # the sandbox's one line when it did not end "ok"
    notes: list[str] = []  # e.g. "bfloat16 task checked on its float32 twin on CPU"
    summary: str  # one line: "3/6 cases pass; edge:1 seed 0: 12 mismatches, max abs err 1.0"
