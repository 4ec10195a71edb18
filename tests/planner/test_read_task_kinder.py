"""read_task (the planner's literal view of a task): KERNELS[0] is the primary, not the first @triton.jit in
the file, and a KernelBench problem file (no CONFIG) is read instead of refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.planner.context import read_task

ROOT = Path(__file__).resolve().parents[2]

HELPER_FIRST = '''
import triton
import triton.language as tl


@triton.jit
def _helper(x):
    return x * 2


@triton.jit
def main_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr, _helper(tl.load(x_ptr)))


KERNELS = (main_kernel,)
CONFIG = {"BLOCK": 128, "num_warps": 4, "num_stages": 1}
'''


def test_primary_is_kernels_0_not_the_first_jit_function() -> None:
    view = read_task("t.py", HELPER_FIRST)
    assert view.kernels == ["_helper", "main_kernel"]
    assert view.primary == "main_kernel"


def test_primary_falls_back_to_the_first_jit_function_without_kernels() -> None:
    assert read_task("t.py", HELPER_FIRST.replace("KERNELS = (main_kernel,)", "")).primary == "_helper"


def test_a_kernelbench_file_is_read_with_an_empty_config() -> None:
    path = ROOT / "examples" / "kernelbench_relu.py"
    view = read_task(str(path), path.read_text())
    assert view.config == {} and view.primary == "relu_kernel"


def test_a_triton_task_without_config_is_still_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="CONFIG must be a dict"):
        read_task("t.py", HELPER_FIRST.replace('CONFIG = {"BLOCK": 128, "num_warps": 4, "num_stages": 1}', ""))
