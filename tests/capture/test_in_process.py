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
