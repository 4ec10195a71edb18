"""The SDK's in-process capture of one requested kernel (services/kpilot/capture/live.py): the answer
carries the task's source and hash, or an error that names the fix; Triton is put back either way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys, threading, time, torch
sys.path.insert(0, {tests!r})
import softmax_program as p
from triton.runtime.interpreter import InterpretedFunction
from services.kpilot.capture import hook, live
from services.telemetry.capture_admit import check_source
from shared.messages import CaptureRequest

before = InterpretedFunction.run
out = {{}}
req = CaptureRequest(source="t", kernel="softmax_kernel", node="n0", event_id="ev")
miss = live.capture_kernel(req, source="t", wait_s=0.2)  # nothing launches it
out["miss"] = miss.error
stop = threading.Event()
def program():
    while not stop.is_set():
        p.softmax(torch.randn(6, 20))
        time.sleep(0.01)
t = threading.Thread(target=program); t.start()
try:
    got = live.capture_kernel(req, source="t", wait_s=60)
    live.MAX_CAPTURED_TASK_BYTES = 100
    big = live.capture_kernel(req, source="t", wait_s=60)
finally:
    stop.set(); t.join()
out["got"] = dict(error=got.error, sha=got.sha256, calls=got.calls, check=check_source(got),
                  request_id=got.request_id == req.id, event_id=got.event_id,
                  has_kernel="def softmax_kernel(" in got.source_text)
out["big"] = big.error
out["restored"] = InterpretedFunction.run is before and not hook.installed()
print(json.dumps(out))
"""


def test_capture_answers_with_the_task_or_an_error_naming_the_fix() -> None:
    code = CHILD.format(tests=str(ROOT / "tests" / "capture"))
    env = os.environ | {"TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert "did not launch softmax_kernel 2 times within 0.2 s" in out["miss"] and "kpilot capture" in out["miss"]
    got = out["got"]
    assert got["error"] == "" and got["check"] == "" and len(got["sha"]) == 64 and got["calls"] >= 2
    assert got["request_id"] and got["event_id"] == "ev" and got["has_kernel"]
    assert "over the 100 byte limit" in out["big"] and "kpilot register" in out["big"]
    assert out["restored"]
