"""`kpilot capture` of a kernel written the way installed Triton libraries write theirs (liger-kernel,
flash-linear-attention; tests/capture/oss_style_kernels.py, written for this test): heuristics over
autotune with a config comprehension, a parameter named like a module global, `eps.to(tl.float32)` on a
float scalar, libdevice's rsqrt. On CPU under the interpreter the program runs to its end under the hook,
the task is written with no problem, and it passes correctness against the captured reference, at the
captured config and at another block."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.toolrunner.tools.run_correctness.spec import run as run_correctness
from shared.tools.run import RunCorrectnessInput

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "capture" / "oss_style_program.py"


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("capture")
    res = subprocess.run([sys.executable, "-m", "services.kpilot", "capture", "--out", str(out), "--", sys.executable,
                          str(PROGRAM)], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
                         env=os.environ | {"TRITON_INTERPRET": "1"})
    # the program's own check ran: autotune under the interpreter, the float scalar and libdevice all worked
    assert res.returncode == 0 and "ok" in res.stdout, res.stdout + res.stderr[-3000:]
    return out


def test_the_library_style_kernel_is_written_without_problems(captured: Path) -> None:
    (k,) = json.loads((captured / "capture.json").read_text())["kernels"]
    assert k["kernel"] == "norm_gate_kernel" and k["calls"] == 2
    assert k["problems"] == [] and Path(k["task"]).is_file()
    text = Path(k["task"]).read_text()
    assert "from triton.language.extra.libdevice import rsqrt" in text
    assert "TypeVar" not in text and "WARPS" not in text  # neither the shadowed global nor the decorators'
    assert "def _gate(x):" in text


@pytest.mark.parametrize("config", [{}, {"BLOCK": 256, "num_warps": 2}])
def test_the_task_passes_interpreter_correctness(captured: Path, config: dict) -> None:
    out = run_correctness(RunCorrectnessInput(task_path=str(captured / "norm_gate_kernel_task.py"), config=config,
                                              device="cpu", shapes=["micro"], seeds=[0, 1]))
    assert out.passed, out.summary


def test_a_block_too_small_for_the_row_fails(captured: Path) -> None:
    # the row (80) must fit one block: not a vacuous comparison of the kernel with itself
    out = run_correctness(RunCorrectnessInput(task_path=str(captured / "norm_gate_kernel_task.py"),
                                              config={"BLOCK": 64}, device="cpu", shapes=["micro"], seeds=[0]))
    assert not out.passed
