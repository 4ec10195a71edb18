"""One job end to end against the real local model server: `kpilot up --llm` (nats-server, the six
services and llama.cpp's OpenAI-compatible server serving SmolLM2-135M on loopback), then `kpilot optimize
--policy llm`. Skipped, with the reason, where `make llm` has not installed the runtime and the model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from services.kpilot import llm_server
from shared.natsserver import free_port

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, check=False)


def _why_not() -> str | None:
    if not llm_server.runtime_installed():
        return "llama_cpp is not installed (run `make llm`)"
    try:
        llm_server.local_model()
    except ValueError as e:
        return str(e)
    return None


@pytest.mark.slow
@pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))
def test_one_llm_job_against_the_local_server(tmp_path: Path) -> None:
    port, llm_port, state = free_port(), free_port(), str(tmp_path / "state")
    url = f"nats://127.0.0.1:{port}"
    up = _run("services.kpilot", "up", "--detach", "--llm", "--llm-port", str(llm_port), "--port", str(port),
              "--state-dir", state, timeout=300)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        out = _run("services.kpilot", "optimize", "examples/vector_add.py", "--policy", "llm", "--budget", "240",
                   "--max-candidates", "3", "--json", "--nats", url, timeout=480)
    finally:
        _run("services.kpilot", "down", "--port", str(port), "--state-dir", state, timeout=60)
    assert out.returncode in (0, 3), out.stdout + out.stderr  # 0 verified (GPU), 3 nothing verified (CPU)
    got = json.loads(out.stdout)
    sha = llm_server.local_model().sha256
    usage = [u["llm"] for u in got["updates"] if u.get("llm")]
    assert usage, f"no job update carried LLM usage: {got['updates'][-1]}"
    last = usage[-1]
    assert last["model"] == llm_server.MODEL_ALIAS and last["model_sha256"] == sha
    assert last["dialect"] == "openai" and last["calls"] >= 1 and last["prompt_tokens"] > 0
    assert last["constraint"] in ("json_schema", "json_object", "grammar")  # constrained, whichever took
    assert got["candidates"], "the job proposed nothing"
    for c in got["candidates"].values():
        assert c["llm"]["model_sha256"] == sha  # each candidate names the model of its plan
    assert got["verdicts"], "no verdict reached the job"
