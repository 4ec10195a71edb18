"""The LLM policy: the context as a prompt, the Plan's JSON Schema as the answer format, the static tools
as JSON-Schema function specs. An answer that does not decode, names an unknown tool, or gives tool
arguments that fail the tool's input schema is sent back with the validation errors, at most
`max_retries` times; then (and on a timeout or a dead endpoint) the fallback policy (rules) plans.

Two adapters behind one `ChatClient` protocol: Ollama's /api/chat through the official `ollama` client
(default), and an OpenAI-compatible /v1/chat/completions through httpx.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

import httpx
import jsonschema
import msgspec

from services.planner.context import PlannerContext, render
from services.planner.policies.base import Plan, Policy, ToolCall, inline_schema, plan_schema
from shared import metrics
from shared.tools.compile import CompileInput
from shared.tools.inspect import PtxasInfoInput, SassInput
from shared.tools.launch import LaunchConfigInput

DEFAULT_MODEL = "qwen2.5-coder:14b"
DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_TEMPERATURE = 0.3  # the default: some exploration, still mostly the likeliest plan
DEFAULT_TIMEOUT_S = 120.0  # a 14B model writes a ~1 kB plan in 20-60 s on one consumer GPU
MAX_RETRIES = 2

# Used while shared/tools/catalog.py CONTRACTS is empty: the static tools a plan may ask for, with the
# input records the toolrunner validates against (shared/tools/*).
_STATIC_TOOLS: tuple[tuple[str, str, type], ...] = (
    (
        "compile",
        "Compile the task's kernel for cuda:90 with config overrides: TTGIR/PTX/cubin hashes.",
        CompileInput,
    ),
    ("ptxas_info", "ptxas -v of the kernel: registers, spills, shared memory.", PtxasInfoInput),
    ("sass", "SASS of the kernel: instruction histogram, LDG/STG widths, HGMMA/HMMA counts.", SassInput),
    (
        "launch_config",
        "Occupancy, limiting resource and waves from warps, registers, shared memory, grid.",
        LaunchConfigInput,
    ),
)

SYSTEM = """You optimise one GPU kernel of a task file. Answer ONLY with a JSON object matching the
given schema (a Plan): `analysis` (short), optional `tool_calls` (tools from the list, args matching their
schemas), and `candidates`, each a list of change descriptions the patcher applies deterministically:
set_constexpr (target = CONFIG key, value), set_num_warps / set_num_stages / set_maxnreg (value),
set_grid (value = grid expression in launch()), add_hint (target = line "L<n>", hint = multiple_of |
max_contiguous | eviction_policy, search = variable, value = argument), source_edit (target = line "L<n>",
search = exact text near that line, replace = new text). Values must be inside SPACE. Never write whole
files. Learn from past attempts; do not repeat a config that was tried."""


class ChatReply(msgspec.Struct, kw_only=True):
    content: str
    tool_calls: list[ToolCall] = []


class ChatError(Exception):
    """The endpoint did not answer (timeout, connection refused, HTTP error)."""


class ChatClient(Protocol):
    async def chat(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], tools: list[dict[str, Any]]
    ) -> ChatReply: ...


def tool_specs() -> list[dict[str, Any]]:
    """Tools as JSON-Schema function specs, from shared/tools/catalog.py CONTRACTS when it exists and is
    filled (no GPU tools: a plan asks for diagnosis, the verifier measures), else the static table."""
    try:
        from shared.tools.catalog import CONTRACTS  # type: ignore[import-not-found]
    except ImportError:  # the catalog was absent when this was written
        CONTRACTS = ()
    table = [(c.name, c.description, c.input) for c in CONTRACTS if not getattr(c, "needs_gpu", False)]
    table = table or list(_STATIC_TOOLS)
    return [
        {"type": "function", "function": {"name": n, "description": d, "parameters": inline_schema(t)}}
        for n, d, t in table
    ]


class OllamaChat:
    def __init__(
        self,
        host: str = DEFAULT_HOST,
        model: str = DEFAULT_MODEL,
        *,
        temperature: float = DEFAULT_TEMPERATURE,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        import ollama  # imported here: the rules-only planner does not need it loaded

        self.client = ollama.AsyncClient(host=host, timeout=timeout_s)
        self.model = model
        self.temperature = temperature
        self._errors = (ollama.ResponseError, ollama.RequestError, httpx.HTTPError, ConnectionError)

    async def chat(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], tools: list[dict[str, Any]]
    ) -> ChatReply:
        try:
            r = await self.client.chat(
                model=self.model,
                messages=messages,
                format=schema,
                tools=tools or None,
                options={"temperature": self.temperature},
                stream=False,
            )
        except self._errors as e:
            raise ChatError(f"ollama: {type(e).__name__}: {e}") from e
        metrics.on_llm_tokens(self.model, r.prompt_eval_count, r.eval_count)
        calls = [
            ToolCall(tool=c.function.name, args=dict(c.function.arguments or {}))
            for c in (r.message.tool_calls or [])
        ]
        return ChatReply(content=r.message.content or "", tool_calls=calls)


class OpenAIChat:
    """Any OpenAI-compatible server (vLLM, llama.cpp server, LM Studio): POST /v1/chat/completions."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        temperature: float = DEFAULT_TEMPERATURE,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.url = (
            base_url.rstrip("/")
            + ("" if base_url.rstrip("/").endswith("/v1") else "/v1")
            + "/chat/completions"
        )
        self.model = model
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.temperature = temperature
        self.timeout_s = timeout_s

    async def chat(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], tools: list[dict[str, Any]]
    ) -> ChatReply:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "response_format": {"type": "json_schema", "json_schema": {"name": "plan", "schema": schema}},
        }
        if tools:
            body["tools"] = tools
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s) as c:
                r = await c.post(self.url, json=body, headers=self.headers)
                r.raise_for_status()
                reply = r.json()
                msg = reply["choices"][0]["message"]
                usage = reply.get("usage") or {}
                metrics.on_llm_tokens(self.model, usage.get("prompt_tokens"), usage.get("completion_tokens"))
        except (httpx.HTTPError, KeyError, IndexError, ValueError) as e:
            raise ChatError(f"openai-compatible endpoint: {type(e).__name__}: {e}") from e
        calls = []
        for c in msg.get("tool_calls") or []:
            fn = c.get("function", {})
            args = fn.get("arguments") or {}
            try:
                calls.append(
                    ToolCall(
                        tool=fn.get("name", ""),
                        args=json.loads(args) if isinstance(args, str) else dict(args),
                    )
                )
            except json.JSONDecodeError:
                calls.append(ToolCall(tool=fn.get("name", ""), args={"_unparsed": str(args)}))
        return ChatReply(content=msg.get("content") or "", tool_calls=calls)


def validate(content: str, extra_calls: list[ToolCall], tools: list[dict[str, Any]]) -> Plan | list[str]:
    """The Plan an answer holds, or the list of what is wrong with it (sent back to the model)."""
    try:
        plan = msgspec.json.decode(content.encode(), type=Plan)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        return [f"the answer is not a valid Plan: {e}"]
    plan.tool_calls = list(plan.tool_calls) + list(extra_calls)
    specs = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    errors = []
    for i, call in enumerate(plan.tool_calls):
        if call.tool not in specs:
            errors.append(f"tool_calls[{i}]: unknown tool {call.tool!r}; available: {', '.join(specs)}")
            continue
        for err in jsonschema.Draft202012Validator(specs[call.tool]).iter_errors(call.args):
            errors.append(f"tool_calls[{i}] ({call.tool}) args: {err.message}")
    if not plan.candidates and not plan.tool_calls and not plan.done:
        errors.append(
            "the plan has no candidates, no tool calls and is not done: propose at least one change"
        )
    return errors or plan


class LlmPolicy:
    name = "llm"

    def __init__(
        self,
        client: ChatClient,
        fallback: Policy,
        *,
        max_retries: int = MAX_RETRIES,
        tools: list[dict[str, Any]] | None = None,
    ) -> None:
        self.client = client
        self.fallback = fallback
        self.max_retries = max_retries
        self.tools = tool_specs() if tools is None else tools
        self.schema = plan_schema()
        self.transcript: list[dict[str, Any]] = []  # the last exchange, for the job's record and tests

    async def propose(self, ctx: PlannerContext) -> Plan:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": render(ctx)},
        ]
        self.transcript = messages
        why = ""
        for attempt in range(1 + self.max_retries):
            try:
                reply = await self.client.chat(messages, self.schema, self.tools)
            except ChatError as e:
                why = str(e)
                break
            got = validate(reply.content, reply.tool_calls, self.tools)
            if isinstance(got, Plan):
                got.policy = self.name
                return got
            why = "; ".join(got)
            messages += [
                {"role": "assistant", "content": reply.content},
                {
                    "role": "user",
                    "content": f"Your answer was invalid (attempt {attempt + 1}): {why}. "
                    "Answer again with only the corrected JSON Plan.",
                },
            ]
        plan = await self.fallback.propose(ctx)
        plan.policy = f"{self.name}->{self.fallback.name}"
        plan.analysis = f"llm fell back to {self.fallback.name} ({why[:300]}); {plan.analysis}"
        return plan


def policy_from_env(env: Mapping[str, str], fallback: Policy) -> LlmPolicy:
    """KPILOT_LLM_API = ollama (default) | openai; KPILOT_LLM_HOST, KPILOT_LLM_MODEL, KPILOT_LLM_TEMPERATURE,
    KPILOT_LLM_API_KEY. Nothing connects until the first plan is asked for."""
    temp = float(env.get("KPILOT_LLM_TEMPERATURE", DEFAULT_TEMPERATURE))
    model = env.get("KPILOT_LLM_MODEL", DEFAULT_MODEL)
    host = env.get("KPILOT_LLM_HOST", env.get("OLLAMA_HOST", DEFAULT_HOST))
    client: ChatClient
    if env.get("KPILOT_LLM_API", "ollama") == "openai":
        client = OpenAIChat(host, model, api_key=env.get("KPILOT_LLM_API_KEY", ""), temperature=temp)
    else:
        client = OllamaChat(host, model, temperature=temp)
    return LlmPolicy(client, fallback)
