"""The policy interface: `await policy.propose(context) -> Plan`.

A Plan is analysis, the tool calls it wants run (checked against the tools' input schemas before they
run), and candidates, each a list of change descriptions the patcher applies. The LLM policy asks the
model to answer in a subset of it built from the offered changes (llm_offer.answer_schema).
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from services.planner.context import PlannerContext
from shared.messages import ChangeDescription, LlmUsage


class ToolCall(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    tool: str  # a tool name from the catalog, e.g. "compile", "ptxas_info", "launch_config"
    args: dict[str, Any] = {}
    why: str = ""


class CandidatePlan(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    changes: list[ChangeDescription]
    rationale: str = ""


class Plan(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    analysis: str
    tool_calls: list[ToolCall] = []
    candidates: list[CandidatePlan] = []
    done: bool = False  # the policy sees nothing left worth trying
    policy: str = ""  # filled in by the planner: which policy produced it ("rules", "llm", "llm->rules")
    llm: LlmUsage | None = None  # filled in by the llm policy: model, answer format, tokens, seconds
    # candidates the policy left out because the patcher refused them on the task source, with its reason
    # (the llm policy screens every answer: llm_check.screen)
    rejected: list[str] = []


class Policy(Protocol):
    name: str

    async def propose(self, ctx: PlannerContext) -> Plan: ...


def inline_schema(t: type) -> dict[str, Any]:
    """msgspec's schema for `t` with the root definition inlined, the others kept under $defs: Ollama's
    `format` and a function's `parameters` want an object schema at the top, not a bare $ref."""
    s = msgspec.json.schema(t)
    ref = s.get("$ref", "")
    if not ref.startswith("#/$defs/"):
        return s
    name = ref.removeprefix("#/$defs/")
    root = dict(s["$defs"][name])
    others = {k: v for k, v in s["$defs"].items() if k != name}
    return root | ({"$defs": others} if others else {})


def plan_schema() -> dict[str, Any]:
    return inline_schema(Plan)
