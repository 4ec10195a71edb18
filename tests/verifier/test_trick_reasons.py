"""Verdict reasons name the trick: the honesty probe on CPU (Triton's interpreter, real sandboxed workers)
against candidates that launch no Triton kernel, the pure namer, and a crash's error line."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from services.toolrunner.error_text import error_line
from services.toolrunner.registry import local_executor
from services.toolrunner.sandbox import SandboxOutcome
from services.toolrunner.tricks import name_trick
from services.verifier.micro_checks import honesty_reasons
from shared.toolclient import InProcessToolClient
from shared.tools.honesty import HonestyOutput

ROOT = Path(__file__).resolve().parents[2]
CHEATS = ROOT / "tests" / "verifier" / "cheats"

PROBE_EXPECTED = {
    "empty_no_kernel": "no_kernel_launch: launch ran no Triton kernel: empty/uninitialised output",
    "zeros_no_kernel": "no_kernel_launch: launch ran no Triton kernel: constant output: every element is 0",
    "reference_no_kernel": "calls_reference: launch ran the reference's torch ops aten.add",
}


@pytest.mark.parametrize("name", sorted(PROBE_EXPECTED))
def test_the_honesty_probe_names_the_trick_of_a_launch_without_a_kernel(name: str) -> None:
    args = {"task_path": str(ROOT / "examples" / "vector_add.py"), "candidate_path": str(CHEATS / f"{name}.py"),
            "device": "cpu"}
    res = asyncio.run(InProcessToolClient(local_executor(), source="test").call("honesty_probe", args))
    assert res.ok and res.result is not None, res.error
    import msgspec

    out = msgspec.convert(res.result, HonestyOutput)
    reasons = honesty_reasons(out)
    assert any(PROBE_EXPECTED[name] in r for r in reasons), reasons
    assert not any("the answer came from somewhere else" in r for r in reasons), reasons


def test_the_namer_tells_empty_constant_reference_and_torch_compute_apart() -> None:
    x = np.arange(4, dtype=np.float32)
    nan = np.full(4, np.nan, dtype=np.float32)
    assert name_trick([nan], set(), {"aten.add"}).startswith("empty/uninitialised output: every value is NaN")
    assert name_trick([x * 0], {"aten.empty_like"}, {"aten.add"}, {"aten.empty_like"}).startswith(
        "empty/uninitialised output: launch allocates")
    assert name_trick([x * 0], set(), {"aten.add"}, {"aten.zeros_like"}) == (
        "constant output: every element is 0 whatever the input")
    assert name_trick([x], {"aten.add"}, {"aten.add"}).startswith("reference called: ")
    assert name_trick([x], {"aten.mul"}, {"aten.add"}) == "no Triton kernel: the output comes from torch ops aten.mul"


TORCH_CUDA_CRASH = """Traceback (most recent call last):
  File "/w/services/toolrunner/tools/bench/worker.py", line 88, in main
    torch.cuda.synchronize()
torch.AcceleratorError: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""


def test_a_crash_reason_carries_the_exception_line_not_torchs_last_hint() -> None:
    assert error_line(TORCH_CUDA_CRASH) == (
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered")
    assert error_line("Fatal Python error: Segmentation fault\n\nThread 0x1 (most recent call first):\n"
                      "  File \"x.py\", line 3 in f\n") == "Fatal Python error: Segmentation fault"
    assert error_line("just a line\n") == "just a line" and error_line("") == ""
    crashed = SandboxOutcome(status="failed", returncode=1, duration_s=1.0, stderr_tail=TORCH_CUDA_CRASH)
    assert "illegal memory access" in crashed.message
