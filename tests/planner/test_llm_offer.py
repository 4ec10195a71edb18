"""The offered changes and the answer schema built from them (services/planner/policies/llm_offer.py):
what a small model may answer under constrained decoding, checked with jsonschema, msgspec and the real
patcher on real task files and a real corpus decomposition."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import msgspec

from services.planner.patcher import PatchRejected, apply_changes
from services.planner.policies.base import Plan
from services.planner.policies.llm import LlmPolicy, validate
from services.planner.policies.llm_offer import (
    accepted_kinds,
    answer_schema,
    offers_for,
    render_offers,
    render_source,
    transform_offers,
)
from services.planner.policies.rules import RulesPolicy
from tests.fixtures.llm.contexts import corpus_context, task_context

ROOT = Path(__file__).resolve().parents[2]
# Placeholder records in the shape of the transformation table's records (`kpilot transforms --json`); the
# real table replaces them when it lands.
PLACEHOLDER_RECORDS = [
    {"name": "split_k", "summary": "split the K loop", "answers": ["small_grid"],
     "params": [{"name": "SPLIT_K", "domain": [2, 4, 8], "default": 2}]},
    {"name": "grouped_order", "summary": "", "answers": [], "params": [{"name": "GROUP_M", "domain": [4, 8]}]},
]
PLACEHOLDER_TRANSFORMS = transform_offers(PLACEHOLDER_RECORDS)


def _answer(changes: list[dict]) -> dict:
    return {"analysis": "a", "candidates": [{"changes": changes, "rationale": "r"}]}


def test_offers_follow_space_and_the_answer_schema_admits_only_their_domains() -> None:
    ctx = task_context("examples/matmul.py")
    offers = offers_for(ctx)
    kinds = [(o.kind, o.target) for o in offers]
    assert ("set_constexpr", "BLOCK_M") in kinds and ("set_num_warps", "") in kinds
    assert ("set_num_stages", "") in kinds and kinds[-1] == ("source_edit", "")
    schema = answer_schema(offers)
    v = jsonschema.Draft202012Validator(schema)
    ok = _answer([{"change": "set_constexpr", "target": "BLOCK_M", "value": 128},
                  {"change": "set_num_warps", "value": 8}])
    assert not list(v.iter_errors(ok))
    for bad in (
        _answer([{"change": "set_constexpr", "target": "BLOCK_M", "value": 96}]),  # not in SPACE
        _answer([{"change": "set_constexpr", "target": "BLOCK_Q", "value": 64}]),  # not a constexpr
        _answer([{"change": "set_maxnreg", "value": 128}]),  # not offered: maxnreg is not in SPACE
        _answer([{"change": "source_edit", "target": "line 3", "search": "x", "replace": "y"}]),
        {"analysis": "a", "candidates": []},
    ):
        assert list(v.iter_errors(bad)), bad


def test_every_offer_gives_an_answer_that_decodes_and_patches() -> None:
    ctx = task_context("examples/matmul.py")
    schema = answer_schema(offers_for(ctx))
    for o in offers_for(ctx):
        if o.kind == "source_edit":
            continue
        for value in o.values:
            ch = {"change": o.kind, "value": value} | ({"target": o.target} if o.target else {})
            content = json.dumps(_answer([ch]))
            plan = validate(content, [], [], schema)
            assert isinstance(plan, Plan), plan
            got = apply_changes(ctx.task.source, plan.candidates[0].changes)
            assert not isinstance(got, PatchRejected), got
            key = o.target or {"set_num_warps": "num_warps", "set_num_stages": "num_stages"}[o.kind]
            assert got[1][key] == value


def test_validate_names_a_value_outside_the_domain() -> None:
    ctx = task_context("examples/matmul.py")
    schema = answer_schema(offers_for(ctx))
    got = validate(json.dumps(_answer([{"change": "set_num_warps", "value": 3}])), [], [], schema)
    assert isinstance(got, list) and any("not one of the offered changes" in e for e in got)


def test_transform_records_are_offered_only_when_the_messages_take_the_kind() -> None:
    ctx = task_context("examples/matmul.py")
    if "transform" not in accepted_kinds():  # before the transformation table lands
        assert all(o.kind != "transform" for o in offers_for(ctx, PLACEHOLDER_TRANSFORMS))
    offers = offers_for(ctx, PLACEHOLDER_TRANSFORMS, kinds=accepted_kinds() | {"transform"}, check=False)
    text = render_offers(offers)
    assert "transform split_k(SPLIT_K in [2, 4, 8]): split the K loop (answers small_grid)" in text
    v = jsonschema.Draft202012Validator(answer_schema(offers))
    good = _answer([{"change": "transform", "transform": "split_k", "params": {"SPLIT_K": 4}}])
    assert not list(v.iter_errors(good))
    assert list(v.iter_errors(_answer([{"change": "transform", "transform": "split_k", "params": {"SPLIT_K": 3}}])))
    assert list(v.iter_errors(_answer([{"change": "transform", "transform": "nope", "params": {"GROUP_M": 4}}])))


def test_prompt_has_diagnosis_with_lines_source_hardware_and_offers() -> None:
    ctx = corpus_context("atomic_one_counter")
    policy = LlmPolicy(client=None, fallback=RulesPolicy(), tools=[])  # type: ignore[arg-type]
    user = policy.messages(ctx, offers_for(ctx))[1]["content"]
    assert "atomic_contention" in user and "cases.py:256" in user  # the finding with its line
    assert "L256|     tl.atomic_add(out_ptr, tl.sum(x, axis=0))" in user  # the line, quotable
    assert "hardware rules:" in user and "set_constexpr BLOCK value in [256, 512, 1024, 2048, 4096]" in user
    src = (ROOT / "tests/decomposer/corpus/cases.py").read_text().splitlines()
    for line in render_source(ctx).splitlines()[1:]:
        n, text = line.split("| ", 1)
        assert src[int(n[1:]) - 1] == text


def test_a_source_edit_from_the_excerpt_goes_through_the_patcher() -> None:
    ctx = corpus_context("atomic_one_counter")
    schema = answer_schema(offers_for(ctx))
    edit = {"change": "source_edit", "target": "L256", "search": "tl.atomic_add(out_ptr, tl.sum(x, axis=0))",
            "replace": "tl.atomic_add(out_ptr, tl.sum(x, axis=0), sem='relaxed')"}
    plan = validate(json.dumps(_answer([edit])), [], [], schema)
    assert isinstance(plan, Plan)
    got = apply_changes(ctx.task.source, plan.candidates[0].changes)
    assert not isinstance(got, PatchRejected) and "sem='relaxed'" in got[0]
    assert msgspec.json.decode(json.dumps(_answer([edit])), type=Plan).candidates[0].changes[0].target == "L256"


def test_compact_answers_label_their_text_and_quote_shown_lines_only() -> None:
    from services.planner.policies.llm_offer import COMPACT_SOURCE_LINES, labels_for

    ctx = corpus_context("atomic_one_counter")
    offers = offers_for(ctx, source_lines=COMPACT_SOURCE_LINES, exact_search=True)
    v = jsonschema.Draft202012Validator(answer_schema(offers, labels_for(ctx)))
    line = "tl.atomic_add(out_ptr, tl.sum(x, axis=0))"
    edit = {"change": "source_edit", "target": "L256", "search": line, "replace": line[:-1] + ", sem='relaxed')"}
    ok = {"analysis": "atomic_contention at cases.py:256", "candidates": [{"changes": [edit],
                                                                          "rationale": "config search"}]}
    assert not list(v.iter_errors(ok))
    assert list(v.iter_errors(ok | {"analysis": "This is a plan to improve the performance of the CPU."}))
    for bad in ({"search": "1024}}}]} }"}, {"replace": 'two\nlines'}, {"replace": 'a "quote"'}):
        cand = {"changes": [edit | bad], "rationale": "config search"}
        assert list(v.iter_errors(ok | {"candidates": [cand]})), bad


def test_every_offered_change_applies_to_the_task_source_on_its_own() -> None:
    """The offers are what the real patcher applies here: values, transformations (with each parameter
    value) and quotable lines it refuses are not offered (llm_check.applicable)."""
    from services.planner.policies.llm import table_transforms
    from services.planner.policies.llm_offer import COMPACT_SOURCE_LINES
    from shared.messages import ChangeDescription

    ctx = corpus_context("atomic_one_counter")
    unchecked = offers_for(ctx, table_transforms(), source_lines=COMPACT_SOURCE_LINES, exact_search=True,
                           check=False)
    offers = offers_for(ctx, table_transforms(), source_lines=COMPACT_SOURCE_LINES, exact_search=True)
    names = {o.target for o in offers if o.kind == "transform"}
    assert names and names < {o.target for o in unchecked if o.kind == "transform"}  # some refused here
    for o in offers:
        if o.kind == "transform":
            changes = [[ChangeDescription(change="transform", transform=o.target, target=ctx.kernel,
                                          params={p: v})] for p, d in o.params.items() for v in d]
        elif o.kind == "source_edit":
            changes = [[ChangeDescription(change="source_edit", target=t, search=x, replace="pass")]
                       for t, x in zip(o.values, o.texts, strict=True)]
        else:
            changes = [[ChangeDescription(change=o.kind, target=o.target, value=v)] for v in o.values]
        for ch in changes:
            assert not isinstance(apply_changes(ctx.task.source, ch, "cases.py"), PatchRejected), ch


def test_compact_edits_quote_only_whole_simple_statements_and_bring_no_indentation() -> None:
    """The first SmolLM2 run's refused patches (benchmarks/results/llm/smollm2_135m_cpu.json): one-line
    replacements with their own indentation ("unexpected indent" at the edited line) and of a `def` line.
    Neither is admitted now: no loop header, decorator or def is quotable, no replacement starts blank."""
    from services.planner.policies.llm_offer import COMPACT_SOURCE_LINES, labels_for

    ctx = corpus_context("atomic_histogram_loop")
    offers = offers_for(ctx, source_lines=COMPACT_SOURCE_LINES, exact_search=True)
    (edit,) = [o for o in offers if o.kind == "source_edit"]
    src = ctx.task.source.splitlines()
    shown = dict(zip(edit.values, edit.texts, strict=True))
    assert shown and all(src[int(n[1:]) - 1].strip() == t for n, t in shown.items())
    assert not any(t.startswith(("for ", "def ", "@")) or t.endswith(":") for t in shown.values())
    v = jsonschema.Draft202012Validator(answer_schema(offers, labels_for(ctx)))
    n, text = next(iter(shown.items()))
    other = next(x for x in shown if x != n)

    def answer(**edit_fields: str) -> dict:
        e = {"change": "source_edit", "target": n, "search": text, "replace": "pass"} | edit_fields
        return {"analysis": "config search", "candidates": [{"changes": [e], "rationale": "config search"}]}

    assert not list(v.iter_errors(answer()))
    assert list(v.iter_errors(answer(replace="    " + text)))  # its own indentation
    assert list(v.iter_errors(answer(target=other)))  # a line's text belongs to that line only
    assert list(v.iter_errors(answer(search="for i in range(CHUNKS):")))
