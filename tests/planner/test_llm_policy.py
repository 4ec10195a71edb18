"""The LLM policy against a SCRIPTED HTTP server on 127.0.0.1 (http.server in a thread), speaking Ollama's
/api/chat and the OpenAI-compatible /v1/chat/completions. The server is scripted: each request gets the
next canned answer of its script, and every request body is recorded so the tests can check what the real
clients (the `ollama` package, httpx) actually sent: the Plan schema as `format`, the tools, temperature.
No model runs here; the answers are written by hand to exercise valid, invalid, unknown-tool and timeout
paths.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from services.planner.context import build_context, read_task
from services.planner.policies.llm import LlmPolicy, OllamaChat, OpenAIChat
from services.planner.policies.rules import RulesPolicy

ROOT = Path(__file__).resolve().parents[2]

VALID = {
    "analysis": "32x32 tiles leave the tensor cores idle; grow the tile",
    "candidates": [
        {
            "changes": [
                {"change": "set_constexpr", "target": "BLOCK_M", "value": 128},
                {"change": "set_num_warps", "value": 8},
            ],
            "rationale": "bigger tile",
        }
    ],
}
UNKNOWN_TOOL = {"analysis": "look first", "tool_calls": [{"tool": "rm_rf", "args": {}}]}
BAD_ARGS = {
    "analysis": "look first",
    "tool_calls": [{"tool": "launch_config", "args": {"num_warps": "four"}}],
}


class Script:
    def __init__(self, answers: list[object], delay_s: float = 0.0) -> None:
        self.answers = answers
        self.delay_s = delay_s
        self.requests: list[dict] = []


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script([])

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            return

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            script.requests.append({"path": self.path, "body": body})
            if script.delay_s:
                time.sleep(script.delay_s)
            answer = script.answers.pop(0) if script.answers else VALID
            content = answer if isinstance(answer, str) else json.dumps(answer)
            if self.path == "/api/chat":
                out = {
                    "model": body["model"],
                    "created_at": "2026-01-01T00:00:00Z",
                    "done": True,
                    "done_reason": "stop",
                    "message": {"role": "assistant", "content": content},
                }
            else:
                out = {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": content},
                        }
                    ],
                }
            data = json.dumps(out).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", script
    finally:
        httpd.shutdown()
        httpd.server_close()


def _ctx():
    path = ROOT / "examples/matmul.py"
    return build_context(read_task(str(path), path.read_text()), "matmul_kernel")


def _clients(url: str, timeout_s: float = 10.0) -> dict:
    return {
        "ollama": OllamaChat(url, "scripted-model", timeout_s=timeout_s),
        "openai": OpenAIChat(url, "scripted-model", timeout_s=timeout_s),
    }


@pytest.mark.parametrize("api", ["ollama", "openai"])
async def test_valid_plan_and_what_the_client_sent(server, api: str) -> None:
    url, script = server
    script.answers = [VALID]
    plan = await LlmPolicy(_clients(url)[api], RulesPolicy()).propose(_ctx())
    assert plan.policy == "llm" and plan.candidates[0].changes[0].value == 128
    (req,) = script.requests
    body = req["body"]
    if api == "ollama":
        assert req["path"] == "/api/chat" and body["stream"] is False
        assert body["format"]["title"] == "Plan" and "candidates" in body["format"]["properties"]
        assert body["options"]["temperature"] == 0.3
    else:
        assert req["path"] == "/v1/chat/completions" and body["temperature"] == 0.3
        assert body["response_format"]["json_schema"]["schema"]["title"] == "Plan"
    names = {t["function"]["name"] for t in body["tools"]}
    assert {"compile", "ptxas_info", "sass", "launch_config"} <= names
    assert "matmul_kernel" in body["messages"][1]["content"]  # the rendered context


@pytest.mark.parametrize("api", ["ollama", "openai"])
async def test_invalid_json_is_sent_back_with_the_error_then_accepted(server, api: str) -> None:
    url, script = server
    script.answers = ['{"analysis": "oops", "candidates": [', VALID]
    plan = await LlmPolicy(_clients(url)[api], RulesPolicy()).propose(_ctx())
    assert plan.policy == "llm" and len(script.requests) == 2
    retry = script.requests[1]["body"]["messages"]
    assert retry[-1]["role"] == "user" and "invalid" in retry[-1]["content"]
    assert retry[-2] == {"role": "assistant", "content": '{"analysis": "oops", "candidates": ['}


@pytest.mark.parametrize("api", ["ollama", "openai"])
async def test_unknown_tool_and_bad_args_are_rejected_then_fall_back_to_rules(server, api: str) -> None:
    url, script = server
    script.answers = [UNKNOWN_TOOL, BAD_ARGS, UNKNOWN_TOOL]
    plan = await LlmPolicy(_clients(url)[api], RulesPolicy(), max_retries=2).propose(_ctx())
    assert len(script.requests) == 3  # one try + two corrections, then no more
    assert "unknown tool 'rm_rf'" in script.requests[1]["body"]["messages"][-1]["content"]
    assert "launch_config" in script.requests[2]["body"]["messages"][-1]["content"]
    assert plan.policy == "llm->rules" and plan.candidates  # the rules policy planned instead
    assert "fell back" in plan.analysis


@pytest.mark.parametrize("api", ["ollama", "openai"])
async def test_timeout_falls_back_to_rules(server, api: str) -> None:
    url, script = server
    script.delay_s = 2.0
    plan = await LlmPolicy(_clients(url, timeout_s=0.5)[api], RulesPolicy()).propose(_ctx())
    assert plan.policy == "llm->rules" and plan.candidates
    assert len(script.requests) == 1  # a dead endpoint is not retried


async def test_dead_endpoint_falls_back() -> None:
    plan = await LlmPolicy(OllamaChat("http://127.0.0.1:9", "m", timeout_s=1.0), RulesPolicy()).propose(
        _ctx()
    )
    assert plan.policy == "llm->rules"


NOT_PYTHON = {"change": "source_edit", "target": "L51", "search": "acc = tl.dot(a, b, acc)",
              "replace": "acc = tl.dot(a, b, acc"}


@pytest.mark.parametrize("api", ["ollama", "openai"])
async def test_a_candidate_the_patcher_refuses_is_left_out_with_its_reason(server, api: str) -> None:
    url, script = server
    script.answers = [{"analysis": "a", "candidates": [{"changes": [NOT_PYTHON], "rationale": "broken"},
                                                       VALID["candidates"][0]]}]
    plan = await LlmPolicy(_clients(url)[api], RulesPolicy()).propose(_ctx())
    assert plan.policy == "llm" and len(script.requests) == 1
    assert [c.changes[0].value for c in plan.candidates] == [128]  # only the one that applies
    (why,) = plan.rejected
    assert why.startswith("rejected llm answer candidate 0") and "does not parse" in why


@pytest.mark.parametrize("api", ["ollama", "openai"])
async def test_an_answer_with_no_applicable_candidate_is_sent_back_with_the_patchers_reason(
    server, api: str
) -> None:
    url, script = server
    script.answers = [{"analysis": "a", "candidates": [{"changes": [NOT_PYTHON], "rationale": "broken"}]}, VALID]
    plan = await LlmPolicy(_clients(url)[api], RulesPolicy()).propose(_ctx())
    assert plan.policy == "llm" and len(script.requests) == 2 and not plan.rejected
    retry = script.requests[1]["body"]["messages"][-1]["content"]
    assert "no candidate applies to the task source" in retry and "does not parse" in retry
