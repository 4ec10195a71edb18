"""The llm policy's offers and answers, checked against the real task source with the real patcher.

Two jobs, one rule (whatever reaches the planner's patcher must apply):
- `applicable(source, filename, kernel, offers)`: every offered change kept only where the patcher applies
  it to this source on its own: config values it accepts (SPACE and the launch limits), transformations
  whose rewrite applies to this kernel (each parameter value tried with the others at their defaults),
  source lines that one `search` resolves to unambiguously near its own line. The answer schema built
  from what is left admits no change the patcher refuses on its own.
- `screen(source, filename, candidates)`: each candidate of an answer applied as a whole (changes can
  still clash: two edits of one line, a replacement that does not parse); the ones that fail are left out
  of the plan, each with the patcher's reason, so they are recorded instead of reaching the funnel.

Why (benchmarks/results/llm/smollm2_135m_cpu.json, the first SmolLM2-135M run): 7 of 42 candidates did
not apply, all compact one-line source edits (the search is the line's text without its indentation). 4
failed "unexpected indent" at the edited line itself (cases.py 161 twice, 261, 269): the replacement
brought its own indentation next to the kept one. 3 failed "invalid syntax" at the edited line (84, 111,
and 281, a `def` line): replacements that were not Python there. The answer schema now admits no leading
blank in a replacement and quotes only lines holding one whole simple statement (llm_offer.offers_for);
what a grammar cannot rule out (a replacement that is not Python) is screened here.
"""

from __future__ import annotations

import ast
import hashlib
from collections import Counter
from collections.abc import Sequence

import msgspec

from services.planner.patcher import PatchRejected, apply_changes
from services.planner.policies.base import CandidatePlan
from services.planner.policies.llm_offer import Offer
from shared.messages import ChangeDescription, Scalar

# The patcher's verdicts for (source, change list), across the rounds of one process: a transformation's
# trial rewrite costs ~0.1-0.4 s (LibCST) on a 300-line file.
_CACHE: dict[tuple[str, str], bool] = {}
_CACHE_MAX = 4096


def applies(source: str, filename: str, changes: list[ChangeDescription]) -> bool:
    key = (hashlib.sha256(source.encode()).hexdigest(), msgspec.json.encode(changes).decode() + filename)
    got = _CACHE.get(key)
    if got is None:
        got = not isinstance(apply_changes(source, changes, filename), PatchRejected)
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[key] = got
    return got


def single_line_statements(source: str) -> set[int]:
    """Lines that hold exactly one whole simple statement (no compound header, decorator or def): a
    one-line replacement there keeps every other line's block structure."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    compound = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor, ast.While,
                ast.If, ast.With, ast.AsyncWith, ast.Try, ast.Match)
    stmts = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    starts = Counter(n.lineno for n in stmts)
    headers = {n.lineno for n in stmts if isinstance(n, compound)}
    return {n.lineno for n in stmts if not isinstance(n, compound) and n.lineno == n.end_lineno
            and starts[n.lineno] == 1 and n.lineno not in headers}


def _config_change(o: Offer, value: Scalar) -> ChangeDescription:
    return ChangeDescription(change=o.kind, target=o.target, value=value)  # type: ignore[arg-type]


def applicable(source: str, filename: str, kernel: str, offers: Sequence[Offer]) -> list[Offer]:
    """The offers with only what the patcher applies to `source` (see the module docstring); an offer
    with nothing left is dropped."""
    out: list[Offer] = []
    for o in offers:
        if o.kind == "transform":
            base = ChangeDescription(change="transform", transform=o.target, target=kernel)
            if not applies(source, filename, [base]):
                continue
            params = {p: [v for v in d if applies(source, filename, [msgspec.structs.replace(base, params={p: v})])]
                      for p, d in o.params.items()}
            if all(params.values()):
                out.append(msgspec.structs.replace(o, params=params))
        elif o.kind == "source_edit":
            if not o.texts:  # a free search (the full prompt): checked per answer by `screen`
                out.append(o)
                continue
            keep = [(line, text) for line, text in zip(o.values, o.texts, strict=True)
                    if applies(source, filename, [ChangeDescription(change="source_edit", target=str(line),
                                                                    search=text, replace=text)])]
            if keep:
                out.append(msgspec.structs.replace(o, values=[x[0] for x in keep], texts=[x[1] for x in keep]))
        else:
            values = [v for v in o.values if applies(source, filename, [_config_change(o, v)])]
            if values:
                out.append(msgspec.structs.replace(o, values=values))
    return out


def with_kernel(changes: list[ChangeDescription], kernel: str) -> list[ChangeDescription]:
    """Transform changes aimed at the planned kernel (the answer leaves `target` to the planner; the offer
    was checked with this kernel, not the file's primary one)."""
    return [msgspec.structs.replace(c, target=kernel) if c.change == "transform" and not c.target else c
            for c in changes]


def screen(source: str, filename: str, candidates: Sequence[CandidatePlan]) -> tuple[list[CandidatePlan], list[str]]:
    """(the candidates the patcher applies to `source`, one line per change or candidate it refused).

    A candidate whose refused changes the patcher names (a transformation with nothing left to rewrite
    after the same one earlier in the list, an edit overlapping another) keeps its other changes; one
    refused as a whole (the result does not parse) is left out."""
    kept, rejected = [], []
    for i, cp in enumerate(candidates):
        changes = list(cp.changes)
        while True:
            got = apply_changes(source, changes, filename)
            if not isinstance(got, PatchRejected):
                kept.append(cp if len(changes) == len(cp.changes) else CandidatePlan(changes=changes,
                                                                                      rationale=cp.rationale))
                break
            named = sorted({e.change_index for e in got.errors})
            if not all(0 <= j < len(changes) for j in named) or len(named) >= len(changes):
                rejected.append(f"candidate {i}: {got.summary()}"[:400])
                break
            rejected.append(f"candidate {i}, without its refused change(s): {got.summary()}"[:400])
            changes = [c for j, c in enumerate(changes) if j not in named]
    return kept, rejected
