"""The two wire dialects of the llm policy behind one `ChatClient` protocol, each with its ladder of answer
formats (constrained decoding):

- OpenAI-compatible POST /v1/chat/completions (vLLM, llama.cpp's server, llama-cpp-python's server, LM
  Studio): `response_format: {type: json_schema}` (OpenAI, vLLM, llama.cpp) -> `response_format: {type:
  json_object, schema}` (llama-cpp-python, which answers 500/422 to json_schema) -> `grammar` (GBNF
  derived from the schema, llama.cpp's field; needs llama_cpp's converter importable) -> none.
- Ollama's /api/chat through the official `ollama` client: `format: <schema>` -> `format: "json"` -> none.

A server that refuses a format (an HTTP error status naming the request, not a timeout) gets the next
rung; the first accepted one is kept for the client's life and every refusal is remembered with its
status (`ChatReply.constraint_notes`), so the job record says which format was used and why. A configured
`constraint` other than "auto" uses that rung only. Token counts, the model name and the wall time of
each call come back on the reply; the last exchanges (request and response bodies) stay in `exchanges`.
"""

from __future__ import annotations

import json
import time
from typing import Any, Protocol

import httpx
import msgspec

from services.planner.policies.base import ToolCall

DEFAULT_TEMPERATURE = 0.3  # the default: some exploration, still mostly the likeliest plan
DEFAULT_TIMEOUT_S = 120.0  # a 14B model writes a ~1 kB plan in 20-60 s on one consumer GPU
# A Plan under answer_schema's caps is <= ~2.5 kB of JSON, ~700 tokens; 768 leaves no room for a runaway.
DEFAULT_MAX_TOKENS = 768
OPENAI_CONSTRAINTS = ("json_schema", "json_object", "grammar", "none")
OLLAMA_CONSTRAINTS = ("format_schema", "format_json", "none")
# Statuses that mean "the server did not take this request as written" (bad request, not found, payload,
# unprocessable, internal error, not implemented): the next answer format is tried. 401/403/429 are not.
REFUSED = frozenset({400, 404, 413, 415, 422, 500, 501})
KEEP_EXCHANGES = 8


class ChatReply(msgspec.Struct, kw_only=True):
    content: str
    tool_calls: list[ToolCall] = []
    model: str = ""
    constraint: str = ""
    constraint_notes: list[str] = []  # refusals met on the way to `constraint`
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    seconds: float = 0.0


class ChatError(Exception):
    """The endpoint did not answer (timeout, connection refused, HTTP error, every format refused)."""


class ChatClient(Protocol):
    dialect: str
    model: str
    model_sha256: str

    async def chat(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], tools: list[dict[str, Any]]
    ) -> ChatReply: ...


def ladder(choices: tuple[str, ...], constraint: str) -> tuple[str, ...]:
    if constraint == "auto":
        return choices
    if constraint not in choices:
        raise ValueError(f"constraint {constraint!r}: use auto or one of {', '.join(choices)}")
    return (constraint,)


def gbnf(schema: dict[str, Any]) -> str | None:
    """llama.cpp's GBNF for the schema, from llama-cpp-python's converter (None when it is not installed:
    the grammar rung is then skipped)."""
    try:
        from llama_cpp.llama_grammar import json_schema_to_gbnf
    except ImportError:
        return None
    return json_schema_to_gbnf(json.dumps(schema))


def _tool_calls(raw: list[dict[str, Any]]) -> list[ToolCall]:
    calls = []
    for c in raw:
        fn = c.get("function", {})
        args = fn.get("arguments") or {}
        try:
            calls.append(
                ToolCall(tool=fn.get("name", ""), args=json.loads(args) if isinstance(args, str) else dict(args))
            )
        except json.JSONDecodeError:
            calls.append(ToolCall(tool=fn.get("name", ""), args={"_unparsed": str(args)}))
    return calls


class OpenAIChat:
    """Any OpenAI-compatible server: POST /v1/chat/completions."""

    dialect = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        temperature: float = DEFAULT_TEMPERATURE,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        constraint: str = "auto",
        model_sha256: str = "",
    ) -> None:
        root = base_url.rstrip("/")
        self.url = root + ("" if root.endswith("/v1") else "/v1") + "/chat/completions"
        self.model = model
        self.model_sha256 = model_sha256
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.temperature = temperature
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens
        self.rungs = ladder(OPENAI_CONSTRAINTS, constraint)
        self.exchanges: list[dict[str, Any]] = []

    def _body(self, rung: str, messages: list[dict[str, Any]], schema: dict[str, Any],
              tools: list[dict[str, Any]]) -> dict[str, Any] | None:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if rung == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "plan", "schema": schema}}
        elif rung == "json_object":
            body["response_format"] = {"type": "json_object", "schema": schema}
        elif rung == "grammar":
            grammar = gbnf(schema)
            if grammar is None:
                return None
            body["grammar"] = grammar
        if tools:
            body["tools"] = tools
        return body

    async def chat(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], tools: list[dict[str, Any]]
    ) -> ChatReply:
        notes: list[str] = []
        async with httpx.AsyncClient(timeout=self.timeout_s) as client:
            for rung in self.rungs:
                body = self._body(rung, messages, schema, tools)
                if body is None:
                    notes.append(f"{rung}: skipped (llama_cpp's schema-to-grammar converter not installed)")
                    continue
                t0 = time.perf_counter()
                try:
                    r = await client.post(self.url, json=body, headers=self.headers)
                except httpx.HTTPError as e:
                    raise ChatError(f"openai-compatible endpoint {self.url}: {type(e).__name__}: {e}") from e
                seconds = time.perf_counter() - t0
                self._keep(body, r)
                if r.status_code in REFUSED and len(self.rungs) > 1 and rung != self.rungs[-1]:
                    notes.append(f"{rung}: refused (HTTP {r.status_code}: {r.text[:160]})")
                    continue
                if r.status_code != 200:
                    raise ChatError(
                        f"openai-compatible endpoint {self.url}: HTTP {r.status_code} with {rung}: "
                        f"{r.text[:300]}; refusals before: {'; '.join(notes) or 'none'}"
                    )
                self.rungs = self.rungs[self.rungs.index(rung):]  # detected: start here next time
                return self._reply(r, rung, notes, seconds)
        raise ChatError(f"openai-compatible endpoint {self.url}: every answer format refused: {'; '.join(notes)}")

    def _keep(self, body: dict[str, Any], r: httpx.Response) -> None:
        try:
            answer: Any = r.json()
        except ValueError:
            answer = r.text
        self.exchanges = (self.exchanges + [
            {"path": r.request.url.path, "request": body, "status": r.status_code, "response": answer}
        ])[-KEEP_EXCHANGES:]

    def _reply(self, r: httpx.Response, rung: str, notes: list[str], seconds: float) -> ChatReply:
        try:
            data = r.json()
            msg = data["choices"][0]["message"]
        except (KeyError, IndexError, ValueError, TypeError) as e:
            raise ChatError(f"openai-compatible endpoint {self.url}: unreadable answer: {e}") from e
        usage = data.get("usage") or {}
        return ChatReply(
            content=msg.get("content") or "",
            tool_calls=_tool_calls(msg.get("tool_calls") or []),
            model=str(data.get("model") or self.model),
            constraint=rung,
            constraint_notes=notes,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            seconds=seconds,
        )


class OllamaChat:
    """Ollama's /api/chat through the `ollama` client."""

    dialect = "ollama"

    def __init__(
        self,
        host: str,
        model: str,
        *,
        temperature: float = DEFAULT_TEMPERATURE,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        constraint: str = "auto",
        model_sha256: str = "",
    ) -> None:
        import ollama  # imported here: the rules-only planner does not need it loaded

        self.client = ollama.AsyncClient(host=host, timeout=timeout_s)
        self.model = model
        self.model_sha256 = model_sha256
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.rungs = ladder(OLLAMA_CONSTRAINTS, constraint)
        self._refused = ollama.ResponseError
        self._errors = (ollama.RequestError, httpx.HTTPError, ConnectionError)

    async def chat(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], tools: list[dict[str, Any]]
    ) -> ChatReply:
        notes: list[str] = []
        for rung in self.rungs:
            fmt: Any = {"format_schema": schema, "format_json": "json", "none": None}[rung]
            t0 = time.perf_counter()
            try:
                r = await self.client.chat(
                    model=self.model,
                    messages=messages,
                    format=fmt,
                    tools=tools or None,
                    options={"temperature": self.temperature, "num_predict": self.max_tokens},
                    stream=False,
                )
            except self._refused as e:
                if e.status_code in REFUSED and rung != self.rungs[-1]:
                    notes.append(f"{rung}: refused (HTTP {e.status_code}: {str(e)[:160]})")
                    continue
                raise ChatError(f"ollama: HTTP {e.status_code} with {rung}: {e}") from e
            except self._errors as e:
                raise ChatError(f"ollama: {type(e).__name__}: {e}") from e
            self.rungs = self.rungs[self.rungs.index(rung):]
            return ChatReply(
                content=r.message.content or "",
                tool_calls=[
                    ToolCall(tool=c.function.name, args=dict(c.function.arguments or {}))
                    for c in (r.message.tool_calls or [])
                ],
                model=r.model or self.model,
                constraint=rung,
                constraint_notes=notes,
                prompt_tokens=r.prompt_eval_count,
                completion_tokens=r.eval_count,
                seconds=time.perf_counter() - t0,
            )
        raise ChatError(f"ollama: every answer format refused: {'; '.join(notes)}")
