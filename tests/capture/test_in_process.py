"""In-process capture (hook.session): the building block for the live path, where a workload's SDK would
capture a hot kernel without restarting the program. Runs in a child python (it patches Triton's classes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import sys, torch, triton
from triton.runtime.jit import JITFunction
sys.path.insert(0, {tests!r})
import softmax_program as p
from services.kpilot.capture import hook
before = JITFunction.run
p.softmax(torch.randn(4, 10))  # before the session: not recorded
with hook.session({out!r}) as report:
    p.softmax(torch.randn(6, 20))
    p.softmax(torch.randn(6, 20))
assert JITFunction.run is before  # Triton put back
print(report[0].kernels[0].calls, report[0].kernels[0].task)
"""


def test_session_records_only_inside_and_writes_a_task(tmp_path: Path) -> None:
    code = CHILD.format(tests=str(ROOT / "tests" / "capture"), out=str(tmp_path))
    env = os.environ | {"TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    calls, task = res.stdout.split()
    assert calls == "2" and Path(task).is_file()
    rep = json.loads((tmp_path / "capture.json").read_text())
    assert [k["kernel"] for k in rep["kernels"]] == ["softmax_kernel"]
    assert "'shape': [6, 20]" in Path(task).read_text()  # the session's call, not the earlier one


PREFILLED = """
import sys, torch
sys.path.insert(0, {tests!r})
import live_program as p
from services.kpilot.capture import hook
x = torch.randn(1000)
out = x * 2.0  # the buffer already holds the result (a reused allocation, a repeated call)
with hook.session({out!r}) as report:
    p.scale_kernel[(4,)](x, out, 1000, 2.0, BLOCK=256)
k = report[0].kernels[0]
print(k.task, k.problems)
"""


def test_an_output_that_already_held_its_result_is_still_found_written(tmp_path: Path) -> None:
    # Issue 21's live path captured a looping program whose output buffer held the same values before the
    # launch: a comparison of before and after saw no write and refused the task ("wrote no tensor").
    code = PREFILLED.format(tests=str(ROOT / "tests" / "capture"), out=str(tmp_path))
    env = os.environ | {"TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip().endswith("[]"), res.stdout  # no problems
    task = Path(res.stdout.split()[0]).read_text()
    assert "INPLACE = (1,)" in task  # out (the second tensor) is the output; x is only read
