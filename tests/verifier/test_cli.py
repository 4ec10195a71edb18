"""`kpilot verify TASK CANDIDATE --json`: the funnel from the command line, no stack needed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from services.kpilot.commands.verify import parse_config

ROOT = Path(__file__).resolve().parents[2]


def kpilot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services.kpilot", *args],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_verify_json_prints_one_verdict_per_layer_reached_and_exits_1_on_a_rejection() -> None:
    p = kpilot("verify", "examples/vector_add.py", "tests/verifier/cheats/precision_fp16.py", "--json")
    assert p.returncode == 1, p.stderr
    (verdict,) = json.loads(p.stdout)
    assert {"layer", "status", "reasons", "measurements", "provenance", "gpu_seconds"} <= set(verdict)
    assert (verdict["layer"], verdict["status"]) == ("static", "fail")
    assert any(r.startswith("precision downgrade: ") for r in verdict["reasons"])
    assert "compile cuda:90" in verdict["provenance"]["method"]
    assert verdict["candidate_path"].endswith("precision_fp16.py")


def test_verify_refuses_a_missing_file_with_the_fix() -> None:
    p = kpilot("verify", "examples/no_such_task.py")
    assert p.returncode == 2
    assert "no such file: examples/no_such_task.py (pass a task .py file)" in p.stderr


def test_config_overrides_are_typed_and_a_bad_one_says_how() -> None:
    assert parse_config(["BLOCK=1024", "flag=true", "mode=fast", "x=0.5"]) == {
        "BLOCK": 1024,
        "flag": True,
        "mode": "fast",
        "x": 0.5,
    }
    with pytest.raises(ValueError, match="write KEY=VALUE, e.g. --config BLOCK=1024"):
        parse_config(["BLOCK"])
