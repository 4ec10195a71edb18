"""Records of the `honesty_probe` tool: the verifier's defences against candidates that game correctness.

`run_correctness` answers "are the outputs right"; this probe answers "did the candidate earn them". The
reference runs first, in its own fresh process, and its outputs stay in the runner's memory (they never
touch a path the candidate could read). Then the candidate runs in another fresh process that watches it:
freed memory is poisoned with NaN before every call, the same call is repeated with new values written
into the same tensors (a cache keyed by pointer returns the old answer), then with the first inputs again
(a candidate that skips repeated calls returns the previous answer), and the worker records what the
candidate touched (monkey-patched functions, frame and gc inspection, threads left running, tensor
subclasses, torch ops that recompute the reference, Triton launches, input writes, late output writes).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from shared.messages import Scalar
from shared.tools.run import Device

FindingKind = Literal[
    "wrong_output",
    "output_ignores_input",
    "input_modified",
    "monkey_patch",
    "frame_inspection",
    "gc_inspection",
    "background_thread",
    "late_write",
    "tensor_subclass",
    "calls_reference",
    "no_kernel_launch",
    "side_stream",
    "stateful_launch",
    "torch_output",
    "error",
]


class HonestyInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str  # the task: its make_inputs and reference are the contract
    candidate_path: str | None = None  # a candidate task file; None = the task itself under `config`
    config: dict[str, Scalar] = {}  # overrides of the candidate's CONFIG
    shape: str = "micro"  # one named shape ("micro", "edge:<i>")
    # Two seeds whose reference outputs differ: the output must change when the input does.
    seeds: list[int] = msgspec.field(default_factory=lambda: [0, 1])
    device: Device = "auto"
    timeout_s: float = 300.0  # per side


class Finding(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kind: FindingKind
    detail: str  # one line naming what was seen, e.g. "replaced torch.cuda.Event.elapsed_time"
    trial: str = ""  # "fresh", "same_pointers", "repeat", "import" or "" for the whole run


class Trial(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One call of the candidate: which inputs it got and how its outputs compare with the reference."""

    name: str  # "fresh" (seed A), "same_pointers" (seed B written into A's tensors), "repeat" (seed A again)
    seed: int
    passed: bool
    max_abs_err: float | None = None
    mismatches: int = 0
    reason: str = ""
    triton_launches: int | None = None  # Triton kernel launches during the call (None: not a Triton task)
    torch_ops: list[str] = []  # aten compute ops the call ran outside Triton (allocation and copies left out)


class HonestyOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    passed: bool  # no finding
    device: str
    config: dict[str, Scalar]
    shape: str
    trials: list[Trial]
    findings: list[Finding]
    reference_ops: list[str] = []  # aten compute ops of reference() (what "calls the reference" means)
    checks: list[str] = []  # every check that ran, so a pass says what it covered
    not_checked: list[str] = []  # checks that could not run here, with why (e.g. side stream: no GPU)
    summary: str
