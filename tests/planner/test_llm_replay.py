"""Recorded real exchanges, replayed: each tests/fixtures/llm/*.json was recorded from a real model server
(tests/fixtures/llm/record.py). The replay server runs as its own process and serves the recorded
responses over HTTP; it answers only when the request the llm policy rebuilds today equals the recorded
one (409 otherwise). So this checks the real wire format in both directions: what the clients send
(model, messages, answer format, tools) and how they read what a real server answered (refusals of an
answer format, usage counts, content)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import msgspec
import pytest

from services.planner.policies.llm import LlmPolicy, table_transforms, tool_specs
from services.planner.policies.rules import RulesPolicy
from tests.fixtures.llm.record import client_of, context_of
from tests.fixtures.llm.replay_server import _norm, first_difference

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "llm"
RECORDINGS = sorted(FIXTURES.glob("*.json"))


def _start(recording: Path, tmp: Path) -> tuple[str, subprocess.Popen]:
    port_file = tmp / "port"
    proc = subprocess.Popen([sys.executable, str(FIXTURES / "replay_server.py"), str(recording), str(port_file)])
    deadline = time.monotonic() + 30
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"replay server for {recording.name} did not start (rc {proc.poll()})")
        time.sleep(0.05)
    return f"http://127.0.0.1:{port_file.read_text()}", proc


def _without_timing(plan: dict) -> dict:
    out = dict(plan)
    if out.get("llm"):
        out["llm"] = {k: v for k, v in out["llm"].items() if k != "seconds"}
    return out


def _rung(body: dict) -> str:
    """The answer format a recorded request asked for (llm_clients' ladder names)."""
    if "response_format" in body:
        return body["response_format"]["type"]
    if "grammar" in body:
        return "grammar"
    if "format" in body:
        return "format_json" if body["format"] == "json" else "format_schema" if body["format"] else "none"
    return "none"


def test_recordings_cover_the_openai_dialect() -> None:
    dialects = {json.loads(p.read_text())["dialect"] for p in RECORDINGS}
    assert "openai" in dialects, f"no openai-dialect recording in {FIXTURES}"


def test_ollama_dialect_recording() -> None:
    if not any(json.loads(p.read_text())["dialect"] == "ollama" for p in RECORDINGS):
        pytest.skip("no ollama recording: no ollama server could be run on the machine that recorded these "
                    "(the `ollama` binary is not in any registry reached here); none was written by hand")


@pytest.mark.parametrize("recording", RECORDINGS, ids=[p.stem for p in RECORDINGS])
async def test_recorded_exchange_replays(recording: Path, tmp_path: Path) -> None:
    rec = json.loads(recording.read_text())
    c = rec["client"]
    url, proc = _start(recording, tmp_path)
    try:
        client = client_of(rec["dialect"], url, c["model"], c["model_sha256"], c["temperature"], c["max_tokens"])
        policy = LlmPolicy(client, RulesPolicy(), tools=tool_specs(), compact=c.get("prompt") == "compact",
                           transforms=table_transforms() if c.get("transforms") == "table" else ())
        plan = await policy.propose(context_of(rec["context"]))
        async with httpx.AsyncClient(timeout=5) as h:
            received = (await h.get(f"{url}/_received")).json()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert len(received) == len(rec["exchanges"]), "the policy made a different number of calls"
    for got, want in zip(received, rec["exchanges"], strict=True):
        diff = first_difference(_norm(got["body"]), _norm(want["request"]))
        assert diff is None, f"request differs from {recording.name} at {diff}: re-record it on purpose"
    assert _without_timing(msgspec.to_builtins(plan)) == _without_timing(rec["plan"])
    statuses = [e["status"] for e in rec["exchanges"]]
    llm = plan.llm
    assert llm is not None and llm.model == c["model"] and llm.model_sha256 == c["model_sha256"]
    if statuses[0] != 200:  # a refused answer format: the next rung answered and the plan says so
        assert "refused" in plan.analysis and llm.constraint != _rung(rec["exchanges"][0]["request"])
    assert llm.constraint == _rung(rec["exchanges"][-1]["request"])
    answered = [e["response"] for e in rec["exchanges"] if e["status"] == 200]
    if rec["dialect"] == "openai" and answered and "usage" in answered[0]:
        assert llm.prompt_tokens == sum(a["usage"]["prompt_tokens"] for a in answered)
        assert llm.completion_tokens == sum(a["usage"]["completion_tokens"] for a in answered)
