"""The LLM policy: the context and the offered changes as a prompt, an answer schema built from the offers
(services/planner/policies/llm_offer.py) as the constrained answer format, the catalog's plan tools
(shared/tools/catalog.py) as JSON-Schema function specs. An answer that does not decode, falls outside the
offered domains, names an unknown tool, gives tool arguments that fail the tool's input schema, or has no
candidate the patcher applies to the task source (llm_check.screen; refused candidates of an answer that
has others are dropped and recorded in `Plan.rejected`) is sent back with the errors, at most
`max_retries` times; then (and on a timeout or a dead endpoint) the fallback policy (rules) plans,
and the plan says why (`Plan.analysis` and `Plan.llm.fallback`).

The wire dialects (OpenAI-compatible, Ollama) and their answer-format ladders are in llm_clients.py.
Every plan carries what its calls cost and who answered (`Plan.llm`: model, weights sha256 when known,
answer format, tokens as the server counted them, seconds).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import msgspec

from services.planner.context import PlannerContext, render
from services.planner.policies.base import Plan, Policy, ToolCall, inline_schema
from services.planner.policies.llm_check import screen, with_kernel
from services.planner.policies.llm_clients import (
    DEFAULT_TEMPERATURE,
    DEFAULT_TIMEOUT_S,
    ChatClient,
    ChatError,
    OllamaChat,
    OpenAIChat,
)
from services.planner.policies.llm_offer import (
    COMPACT_SOURCE_LINES,
    Offer,
    answer_schema,
    labels_for,
    offers_for,
    render_compact,
    render_offers,
    render_source,
    transform_offers,
)
from shared import metrics
from shared.messages import LlmUsage
from shared.tools.catalog import CONTRACTS

DEFAULT_MODEL = "qwen2.5-coder:14b"
DEFAULT_HOST = "http://127.0.0.1:11434"
MAX_RETRIES = 2

SYSTEM = """You optimise one GPU kernel of a task file. Answer ONLY with a JSON object (a Plan):
`analysis` (one sentence: the bottleneck you address), and `candidates` (1-3), each with `changes` (1-4
change descriptions the patcher applies deterministically, taken from the list of changes you may
propose; values only from the listed domains) and a one-line `rationale`. A source_edit names a line
"L<n>" of the task file (the IR summary and findings give line references), the exact text to search near
it and its replacement; never write whole files. Learn from past attempts: do not repeat a config that
was tried, move away from configs that failed."""


def tool_specs() -> list[dict[str, Any]]:
    """Tools as JSON-Schema function specs: the tools of the catalog plans may ask for (shared/tools/catalog.py,
    generated from the toolrunner's registry; static diagnosis, no GPU tools: the verifier measures), each
    with its registry description and the input record the toolrunner validates against."""
    return [
        {"type": "function",
         "function": {"name": c.name, "description": c.description, "parameters": inline_schema(c.input)}}
        for c in CONTRACTS
        if c.for_plans
    ]


def validate(
    content: str, extra_calls: list[ToolCall], tools: list[dict[str, Any]], schema: dict[str, Any] | None = None
) -> Plan | list[str]:
    """The Plan an answer holds, or the list of what is wrong with it (sent back to the model). With
    `schema` (the answer schema of the offers), candidates outside the offered kinds and domains are
    errors too."""
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
    if schema is not None and plan.candidates:
        answer = msgspec.json.decode(content.encode())
        part = {k: answer[k] for k in ("analysis", "candidates") if k in answer}
        for err in list(jsonschema.Draft202012Validator(schema).iter_errors(part))[:4]:
            where = "/".join(str(x) for x in err.absolute_path) or "answer"
            errors.append(f"{where}: {err.message[:200]} (not one of the offered changes)")
    if not plan.candidates and not plan.tool_calls and not plan.done:
        errors.append(
            "the plan has no candidates, no tool calls and is not done: propose at least one change"
        )
    return errors or plan


def _add(u: LlmUsage, r: Any) -> None:
    """Count one answered call into `u`."""
    u.calls += 1
    u.seconds = round(u.seconds + r.seconds, 3)
    u.model = r.model or u.model
    u.constraint = r.constraint
    if r.prompt_tokens is not None:
        u.prompt_tokens = (u.prompt_tokens or 0) + r.prompt_tokens
    if r.completion_tokens is not None:
        u.completion_tokens = (u.completion_tokens or 0) + r.completion_tokens


class LlmPolicy:
    name = "llm"

    def __init__(
        self,
        client: ChatClient,
        fallback: Policy,
        *,
        max_retries: int = MAX_RETRIES,
        tools: list[dict[str, Any]] | None = None,
        transforms: Sequence[Offer] = (),
        compact: bool = False,
    ) -> None:
        self.client = client
        self.fallback = fallback
        self.max_retries = max_retries
        self.tools = tool_specs() if tools is None else tools
        # The transformation table's entries as Offer records (kind "transform"); offered only when the
        # message types accept the `transform` change kind.
        self.transforms = list(transforms)
        self.compact = compact  # the short prompt (llm_offer.render_compact), for small local models
        self.source_lines = COMPACT_SOURCE_LINES if compact else 0
        self.transcript: list[dict[str, Any]] = []  # the last exchange, for the job's record and tests

    def messages(self, ctx: PlannerContext, offers: Sequence[Offer]) -> list[dict[str, Any]]:
        return [
            {"role": "system", "content": SYSTEM},
            {
                "role": "user",
                "content": "\n".join(
                    x
                    for x in (
                        render_compact(ctx) if self.compact else render(ctx),
                        render_source(ctx, self.source_lines),
                        render_offers(offers, self.compact),
                    )
                    if x
                ),
            },
        ]

    def _screen(self, ctx: PlannerContext, plan: Plan) -> Plan | list[str]:
        """The plan with only the candidates the patcher applies to the task source (each refused one
        recorded in `plan.rejected`), or, when none applies, the patcher's reasons to send back."""
        for cp in plan.candidates:
            cp.changes = with_kernel(list(cp.changes), ctx.kernel)
        kept, rejected = screen(ctx.task.source, Path(ctx.task.path).name, plan.candidates)
        if not kept:
            return [f"no candidate applies to the task source: {'; '.join(rejected)}"]
        plan.candidates = kept
        plan.rejected = [f"rejected llm answer {r}" for r in rejected]
        return plan

    async def propose(self, ctx: PlannerContext) -> Plan:
        # Off the event loop: checking the offers runs the patcher (and LibCST rewrites) on the task source.
        offers = await asyncio.to_thread(
            offers_for, ctx, self.transforms, source_lines=self.source_lines, exact_search=self.compact
        )
        schema = answer_schema(offers, labels_for(ctx) if self.compact else ())
        messages = self.messages(ctx, offers)
        self.transcript = messages
        usage = LlmUsage(
            dialect=self.client.dialect, model=self.client.model, model_sha256=self.client.model_sha256
        )
        why = ""
        notes: list[str] = []
        for attempt in range(1 + self.max_retries):
            try:
                reply = await self.client.chat(messages, schema, self.tools)
            except ChatError as e:
                why = str(e)
                break
            _add(usage, reply)
            metrics.on_llm_tokens(reply.model, reply.prompt_tokens, reply.completion_tokens)
            notes += reply.constraint_notes
            got = validate(reply.content, reply.tool_calls, self.tools, schema)
            if isinstance(got, Plan) and got.candidates:
                got = await asyncio.to_thread(self._screen, ctx, got)
            if isinstance(got, Plan):
                got.policy = self.name
                got.llm = usage
                fmt = f"answer format {reply.constraint}" + (f" ({'; '.join(notes)})" if notes else "")
                got.analysis = f"{got.analysis} [{fmt}]"
                return got
            why = f"invalid answer after {attempt + 1} tries: " + "; ".join(got)
            messages += [
                {"role": "assistant", "content": reply.content},
                {
                    "role": "user",
                    "content": f"Your answer was invalid (attempt {attempt + 1}): {'; '.join(got)}. "
                    "Answer again with only the corrected JSON Plan.",
                },
            ]
        if notes:
            why = f"{why} (answer formats: {'; '.join(notes)})"
        plan = await self.fallback.propose(ctx)
        plan.policy = f"{self.name}->{self.fallback.name}"
        plan.analysis = f"llm fell back to {self.fallback.name} ({why[:300]}); {plan.analysis}"
        usage.fallback = why[:500]
        plan.llm = usage
        return plan


def table_transforms() -> list[Offer]:
    """The transformation table (shared/transforms/table.py) as `transform` offers."""
    from shared.transforms.table import records

    return transform_offers(records())


def policy_from_env(env: Mapping[str, str], fallback: Policy) -> LlmPolicy:
    """KPILOT_LLM_API = ollama (default) | openai; KPILOT_LLM_HOST, KPILOT_LLM_MODEL, KPILOT_LLM_TEMPERATURE,
    KPILOT_LLM_API_KEY, KPILOT_LLM_CONSTRAINT (auto, or one answer format of the dialect's ladder),
    KPILOT_LLM_MODEL_SHA256 (the weights' hash, set by `kpilot up --llm`), KPILOT_LLM_TIMEOUT_S,
    KPILOT_LLM_PROMPT = full (default) | compact. Nothing connects until the first plan is asked for."""
    temp = float(env.get("KPILOT_LLM_TEMPERATURE", DEFAULT_TEMPERATURE))
    model = env.get("KPILOT_LLM_MODEL", DEFAULT_MODEL)
    host = env.get("KPILOT_LLM_HOST", env.get("OLLAMA_HOST", DEFAULT_HOST))
    constraint = env.get("KPILOT_LLM_CONSTRAINT", "auto")
    sha = env.get("KPILOT_LLM_MODEL_SHA256", "")
    timeout = float(env.get("KPILOT_LLM_TIMEOUT_S", DEFAULT_TIMEOUT_S))
    client: ChatClient
    if env.get("KPILOT_LLM_API", "ollama") == "openai":
        client = OpenAIChat(
            host, model, api_key=env.get("KPILOT_LLM_API_KEY", ""), temperature=temp,
            constraint=constraint, model_sha256=sha, timeout_s=timeout,
        )
    else:
        client = OllamaChat(
            host, model, temperature=temp, constraint=constraint, model_sha256=sha, timeout_s=timeout
        )
    return LlmPolicy(client, fallback, transforms=table_transforms(),
                     compact=env.get("KPILOT_LLM_PROMPT", "full") == "compact")
