"""What the LLM may answer: the change kinds offered for one context, as records, and the answer schema
built from them.

An `Offer` is one change the model may pick: a config key with its SPACE domain, a named transformation
with its parameter domains, or the free source edit. The schema (`answer_schema`) is small on purpose, so
that a 135M model under constrained decoding still fits it: enums for change kinds, constexpr names from
SPACE, values from their domains, bounded strings and lists. Every answer it admits decodes as a `Plan`.

Transformation entries come from outside (the transformation table, as records): `offers_for(ctx,
transforms)` takes them as `Offer(kind="transform", target=<name>, params={<param>: <domain>})`
(`transform_offers(records)` turns the table's plain records into those) and offers them only when
`shared.messages.ChangeKind` accepts the `transform` kind. A transform answer is
`{"change": "transform", "transform": <name>, "params": {...}}` (target = the kernel, left to the patcher).
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from services.planner.context import PlannerContext
from shared.messages import ChangeKind, Scalar

LAUNCH_KINDS = {"num_warps": "set_num_warps", "num_stages": "set_num_stages", "maxnreg": "set_maxnreg"}
# Bounds of the answer. 3 candidates x 4 changes covers every plan the rules policy makes (it proposes at
# most 3 configs a round). Strings carry no maxLength: llama-cpp-python's schema converter (0.3.36) spells
# maxLength n as n nested optionals, and a 240-character analysis alone made a 14 kB grammar under which
# SmolLM2-135M had not answered after 120 s (first recording attempt); max_tokens bounds them instead.
MAX_CANDIDATES = 3
MAX_CHANGES = 4
# A compact source_edit's replacement: one line of printable ASCII without `"` and `\`, starting with no blank:
# the replaced line keeps its indentation (4 of the 7 failed patches of the first SmolLM2 run brought their
# own: "unexpected indent"); a deletion is `pass`. SmolLM2-135M wrote 770 tokens of prose (raw newlines
# included: llama-cpp-python's string rule admits them) into a free `search` string in 3 of 3 answers of its
# second recording.
REPLACE_LINE = "^[!#-\\[\\]-~][ !#-\\[\\]-~]*$"
SOURCE_LINES = 60  # the kernel's text shown to the model; the suite's largest Triton kernel has ~70 lines
WINDOW = 4  # lines each side of a finding's line when the kernel is longer than SOURCE_LINES


class Offer(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One change the model may propose."""

    kind: str  # a ChangeKind: "set_constexpr", "set_num_warps", ..., "source_edit", "transform"
    target: str = ""  # the constexpr or transformation name ("" for kinds without one)
    values: list[Scalar] = []  # the domain of `value` ([] = not a value change)
    params: dict[str, list[Scalar]] = {}  # transformation parameters and their domains
    current: Scalar | None = None  # the value in the task's CONFIG, shown in the prompt
    # compact source_edit: the text of each line in `values` (paired), the only `search` it may use there
    texts: list[str] = []
    description: str = ""
    answers: list[str] = []  # transform: the decomposer patterns it answers (shown by the full prompt)


def accepted_kinds() -> frozenset[str]:
    """The change kinds a ChangeDescription decodes (the patcher's vocabulary)."""
    return frozenset(typing.get_args(ChangeKind))


def transform_offers(records: Iterable[dict[str, Any]]) -> list[Offer]:
    """Offers from the transformation table's records ({name, summary, answers, params: [{name, domain,
    ...}]}, the shape `kpilot transforms --json` prints)."""
    out = []
    for r in records:
        out.append(
            Offer(
                kind="transform",
                target=r["name"],
                params={p["name"]: list(p["domain"]) for p in r.get("params", [])},
                description=r.get("summary", ""),
                answers=list(r.get("answers", [])),
            )
        )
    return out


def offers_for(
    ctx: PlannerContext,
    transforms: Iterable[Offer] = (),
    *,
    kinds: frozenset[str] | None = None,
    source_edits: bool = True,
    source_lines: int = 0,
    exact_search: bool = False,
    check: bool = True,
) -> list[Offer]:
    """Config keys of SPACE with their domains, the given transformations (when `transform` is a kind the
    messages accept), then the source edit; with `check` (the default) only what the patcher applies to
    this task source (llm_check.applicable)."""
    kinds = accepted_kinds() if kinds is None else kinds
    out: list[Offer] = []
    for key, domain in ctx.task.space.items():
        kind = LAUNCH_KINDS.get(key, "set_constexpr")
        if kind not in kinds or not domain:
            continue
        out.append(
            Offer(
                kind=kind,
                target=key if kind == "set_constexpr" else "",
                values=list(domain),
                current=ctx.task.config.get(key),
            )
        )
    if "transform" in kinds:
        out += [t for t in transforms if t.kind == "transform"]
    lines = kernel_lines(ctx, source_lines)
    if source_edits and "source_edit" in kinds and lines:
        if exact_search:
            # A compact search quotes one shown line that holds one whole simple statement: a one-line
            # replacement of a loop header, a decorator or a `def` line (one failed patch of the first
            # SmolLM2 run replaced a `def` line) breaks the block structure around it. Lines with `"` or `\` are left out: llama-cpp-python
            # 0.3.36 writes them into GBNF literals its parser rejects ("expecting newline or end at
            # \\"))"), and that request killed the server process (bench_llm.py, corpus case clean_softmax).
            from services.planner.policies.llm_check import single_line_statements

            src = ctx.task.source.splitlines()
            whole = single_line_statements(ctx.task.source)
            quoted = [(n, t) for n in lines
                      if n in whole and (t := src[n - 1].strip()) and not {'"', "\\"} & set(t)]
            if quoted:
                out.append(Offer(kind="source_edit", values=[f"L{n}" for n, _ in quoted],
                                 texts=[t for _, t in quoted], description="target = a line 'L<n>' of the kernel source above, search = its "
                                 "text, replace = the new text of that line (one statement, no indentation)"))
        else:
            out.append(
                Offer(
                    kind="source_edit",
                    values=[f"L{n}" for n in lines],
                    description="target = a line 'L<n>' of the kernel source above, search = exact text "
                    "starting within 12 lines of it, replace = the new text",
                )
            )
    if not check:
        return out
    from services.planner.policies.llm_check import applicable

    return applicable(ctx.task.source, Path(ctx.task.path).name, ctx.kernel, out)


def kernel_lines(ctx: PlannerContext, max_lines: int = 0) -> list[int]:
    """Line numbers of the kernel's text shown to the model (render_source): the whole kernel when it fits
    in `max_lines` (default SOURCE_LINES), else windows around the findings' lines."""
    import ast

    from services.planner.patcher import parse_anchor

    max_lines = max_lines or SOURCE_LINES
    try:
        tree = ast.parse(ctx.task.source)
    except SyntaxError:
        return []
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == ctx.kernel), None)
    if fn is None:
        return []
    first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
    last = fn.end_lineno or fn.lineno
    span = list(range(first, last + 1))
    if len(span) > max_lines:
        marks = [n for f in ctx.findings for x in f.locations if (n := parse_anchor(x)) and first <= n <= last]
        keep = sorted({i for n in marks for i in range(n - WINDOW, n + WINDOW + 1) if first <= i <= last})
        span = keep[:max_lines]  # no finding inside a long kernel: no lines (and no source_edit offer)
    return span


def _branches(o: Offer) -> list[dict[str, Any]]:
    if o.kind == "source_edit" and o.texts:
        # One branch per quotable line, its text fixed: the search always resolves at its own line, and
        # the replacement is one line of printable ASCII without `"` or `\`, not starting with a blank
        # (the line keeps its own indentation).
        return [_obj({"change": {"const": o.kind}, "target": {"const": line}, "search": {"const": text},
                      "replace": {"type": "string", "pattern": REPLACE_LINE}})
                for line, text in zip(o.values, o.texts, strict=True)]
    props: dict[str, Any] = {"change": {"const": o.kind}}
    if o.kind == "source_edit":
        props |= {
            "target": {"enum": list(o.values)} if o.values else {"type": "string", "pattern": "^L[0-9]+$"},
            "search": {"type": "string", "minLength": 1},
            "replace": {"type": "string"},
        }
    elif o.kind == "transform":
        props["transform"] = {"const": o.target}
        props["params"] = {
            "type": "object",
            "properties": {p: {"enum": list(d)} for p, d in o.params.items()},
            "required": list(o.params),
            "additionalProperties": False,
        }
    else:
        if o.target:
            props["target"] = {"const": o.target}
        props["value"] = {"enum": list(o.values)}
    return [_obj(props)]


def _obj(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def answer_schema(offers: Sequence[Offer], labels: Sequence[str] = ()) -> dict[str, Any]:
    """The Plan subset a model answers in, for these offers (JSON Schema, draft 2020-12 subset that
    llama.cpp's grammar converter, ollama's `format` and OpenAI's strict mode all take). With `labels`
    (the compact prompt), `analysis` and `rationale` are one of them instead of free text: SmolLM2-135M
    filled a free `analysis` with 250-770 tokens of unrelated prose (raw newlines included) in 3 of 3
    answers of its first recording, so no change description was ever reached."""
    text: dict[str, Any] = {"enum": list(labels)} if labels else {"type": "string"}
    if not offers:
        raise ValueError("no change kinds to offer: the task has no SPACE and source edits are off")
    candidate = {
        "type": "object",
        "properties": {
            "changes": {
                "type": "array",
                "items": {"anyOf": [b for o in offers for b in _branches(o)]},
                "minItems": 1,
                "maxItems": MAX_CHANGES,
            },
            "rationale": text,
        },
        "required": ["changes", "rationale"],
        "additionalProperties": False,
    }
    return {
        "title": "Plan",
        "type": "object",
        "properties": {
            "analysis": text,
            "candidates": {"type": "array", "items": candidate, "minItems": 1, "maxItems": MAX_CANDIDATES},
        },
        "required": ["analysis", "candidates"],
        "additionalProperties": False,
    }


def _show(values: Sequence[Scalar]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def render_offers(offers: Sequence[Offer], compact: bool = False) -> str:
    """The offers as prompt lines, one per change (`compact`: a transformation without the patterns it
    answers; the compact prompt's findings name their transformations already)."""
    lines = ["changes you may propose (each candidate is 1-4 of these):"]
    for o in offers:
        if o.kind == "source_edit":
            lines.append(f"  source_edit: {o.description}")
        elif o.kind == "transform":
            ps = ", ".join(f"{p} in {_show(d)}" for p, d in o.params.items())
            why = f" (answers {', '.join(o.answers)})" if o.answers and not compact else ""
            lines.append(f"  transform {o.target}({ps}){': ' + o.description if o.description else ''}{why}")
        else:
            name = f"{o.kind} {o.target}" if o.target else o.kind
            now = f" (now {o.current})" if o.current is not None else ""
            lines.append(f"  {name} value in {_show(o.values)}{now}")
    return "\n".join(lines)



def render_source(ctx: PlannerContext, max_lines: int = 0) -> str:
    """The kernel's lines as `L<n>| text`, so a source_edit can name a line and quote its text exactly."""
    lines = ctx.task.source.splitlines()
    span = kernel_lines(ctx, max_lines)
    if not span:
        return ""
    out, last = [f"kernel source ({ctx.task.path}):"], None
    for n in span:
        if last is not None and n != last + 1:
            out.append("  ...")
        out.append(f"L{n}| {lines[n - 1]}")
        last = n
    return "\n".join(out)


# The compact prompt, for small models on small machines: SmolLM2-135M read the full prompt (~2,000
# tokens) at 11-15 tokens/s on this 2-core machine under load, 2-3 minutes per plan before it wrote a
# token; this one is ~600. Same facts, fewer of each: the top findings with their lines, the IR summary's
# header and finding lines, three hardware rules, the last attempts, the kernel lines around the findings.
COMPACT_SOURCE_LINES = 14
COMPACT_RULES = ("Threads:", "Shared memory: at most", "Registers:")


def labels_for(ctx: PlannerContext) -> list[str]:
    """What a compact answer's analysis and rationale may say: the finding it answers, or the config."""
    return [f"{f.pattern} at {f.locations[0].rsplit('/', 1)[-1]}" if f.locations else f.pattern
            for f in ctx.findings[:3]] + ["config search"]


def render_compact(ctx: PlannerContext, max_attempts: int = 4) -> str:
    out = [f"kernel {ctx.kernel} (class {ctx.kernel_class}) dtype {ctx.task.dtype}", f"config {ctx.best_config}"]
    head = [ln for ln in ctx.ir_summary.splitlines() if not ln.startswith("[L")][:6]
    if head:
        out += ["diagnosis:"] + [f"  {ln}" for ln in head]
    for f in ctx.findings[:3]:
        where = ", ".join(x.rsplit("/", 1)[-1] for x in f.locations[:2])
        out.append(f"  finding {f.severity} {f.pattern} at {where} -> {', '.join(f.transformations)}")
    out += ["hardware:"] + [f"  {r}" for r in ctx.hardware_rules if r.startswith(COMPACT_RULES)]
    if ctx.attempts:
        out.append("past attempts:")
        for a in ctx.attempts[-max_attempts:]:
            score = f" {a.score_name}={a.score:.4g}" if a.score is not None else ""
            out.append(f"  {a.status}@{a.layer or '-'}{score} config {a.config}")
    return "\n".join(out)
