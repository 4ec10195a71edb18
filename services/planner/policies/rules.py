"""The default policy, no LLM: matched patterns -> their deterministic transformations, plus the config
search (services/planner/search.py) over the task's SPACE, seeded by the diagnosis.

Source rules are a table, one line of why each: a rule reads the finding's line reference and the task
source and returns change descriptions, or None when its precondition does not hold (then the finding is
left to the llm policy, and the analysis says so).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import msgspec

from services.planner.context import Attempt, PlannerContext, TaskView
from services.planner.effects import Effect, effect
from services.planner.patcher import PatchRejected, TaskSource, apply_changes, parse_anchor
from services.planner.policies.base import CandidatePlan, Plan
from services.planner.search import (
    Problem,
    SearchOptions,
    after_failures,
    config_key,
    int_dims,
    next_configs,
)
from shared.messages import ChangeDescription, Scalar
from shared.space_list import domains, points
from shared.tools.decompose import Finding
from shared.transforms.base import Refused, TransformSpec
from shared.transforms.space import derive_space
from shared.transforms.table import answering
from shared.transforms.table import apply as apply_transform

Rule = Callable[[PlannerContext, Finding, list[str]], list[ChangeDescription] | None]
_CONFIG_CHANGE = {"num_warps": "set_num_warps", "num_stages": "set_num_stages", "maxnreg": "set_maxnreg"}


def _lines_of(f: Finding) -> list[int]:
    return [n for n in (parse_anchor(x) for x in f.locations if not x.startswith("sass:")) if n]


def _offsets_hint(ctx: PlannerContext, f: Finding, src: list[str]) -> list[ChangeDescription] | None:
    """`offs = pid * BLOCK + tl.arange(0, BLOCK)` starts at a multiple of BLOCK and is BLOCK-contiguous:
    saying so lets Triton issue 16 B vector accesses (the Triton tutorials' idiom)."""
    pat = re.compile(r"^\s*(\w+)\s*=\s*\w+\s*\*\s*(\w+)\s*\+\s*tl\.arange\(\s*0\s*,\s*\2\s*\)\s*$")
    hits = [(i, m) for i, line in enumerate(src, 1) if (m := pat.match(line))]
    near = [h for h in hits if any(abs(h[0] - n) <= 12 for n in _lines_of(f))] or hits
    if not near:
        return None
    line, m = near[0]
    var, block = m.group(1), m.group(2)
    return [
        ChangeDescription(
            change="add_hint",
            hint="max_contiguous",
            target=f"L{line}",
            search=var,
            value=block,
            rationale=f"{f.pattern}: {var} is {block}-contiguous",
        ),
        ChangeDescription(
            change="add_hint",
            hint="multiple_of",
            target=f"L{line}",
            search=var,
            value=block,
            rationale=f"{f.pattern}: {var} starts at a multiple of {block}",
        ),
    ]


def _tf32_dot(ctx: PlannerContext, f: Finding, src: list[str]) -> list[ChangeDescription] | None:
    """fp32 tl.dot on CUDA cores -> tf32 tensor cores, only where the task's precision policy allows it."""
    if ctx.task.precision != "allow_tf32":
        return None
    for n in _lines_of(f):
        line = src[n - 1] if 0 < n <= len(src) else ""
        m = re.search(r"tl\.dot\(([^()]*)\)", line)
        if m and "input_precision" not in m.group(1):
            return [
                ChangeDescription(
                    change="source_edit",
                    target=f"L{n}",
                    search=m.group(0),
                    replace=f'tl.dot({m.group(1)}, input_precision="tf32")',
                    rationale="precision policy allow_tf32: fp32 dot on tensor cores",
                )
            ]
    return None


def _drop_debug(ctx: PlannerContext, f: Finding, src: list[str]) -> list[ChangeDescription] | None:
    """A device print/assert serialises the kernel and is never part of the computation."""
    out = []
    for n in _lines_of(f):
        line = src[n - 1] if 0 < n <= len(src) else ""
        if re.match(r"^\s*tl\.(device_print|device_assert|static_print)\(.*\)\s*$", line):
            out.append(
                ChangeDescription(
                    change="source_edit",
                    target=f"L{n}",
                    search=line,
                    replace="",
                    rationale="remove device print/assert",
                )
            )
    return out or None


RULES: dict[str, Rule] = {
    "scalar_global_access": _offsets_hint,  # divisibility unknown -> say it with hints
    "mask_blocks_vectorization": _offsets_hint,  # same: the mask bound is the block-aligned offset
    "dot_fp32_on_cuda_cores": _tf32_dot,  # only under PRECISION = "allow_tf32"
    "debug_print_or_assert": _drop_debug,  # never part of the result
}


def config_changes(base: dict[str, Scalar], target: dict[str, Scalar]) -> list[ChangeDescription]:
    """Change descriptions turning config `base` into `target` (keys in target's order)."""
    out = []
    for k, v in target.items():
        if base.get(k) != v:
            kind = _CONFIG_CHANGE.get(k, "set_constexpr")
            out.append(
                ChangeDescription(
                    change=kind,
                    target="" if kind != "set_constexpr" else k,  # type: ignore[arg-type]
                    value=v,
                )
            )
    return out


def other_shapes(task: TaskView) -> list[dict[str, int]]:
    """The micro and edge shapes' integer dimensions (what the search prunes shared memory on)."""
    raw = [task.shapes.get("micro") or {}, *task.edge_shapes]
    return [int_dims(s) for s in raw if s]


class Parent(msgspec.Struct, kw_only=True):
    """The source this round builds on: the task with the best candidate's transforms applied, its CONFIG
    (with the best config on top) and SPACE (the task's, or derived when it has none)."""

    source: str
    start: dict[str, Scalar]  # CONFIG of the parent source as written (what config changes are relative to)
    config: dict[str, Scalar]
    space: dict[str, list[Scalar]]
    derived: bool = False
    points: list[dict[str, Scalar]] = []  # a SPACE given as a list: the configs it allows (else [])


def parent_of(ctx: PlannerContext) -> Parent:
    source = ctx.task.source
    if _transforms_of(ctx.best_changes):
        got = apply_changes(source, ctx.best_changes, Path(ctx.task.path).name)
        if not isinstance(got, PatchRejected):
            source = got[0]
    ts = TaskSource(source, ctx.task.path) if source else None
    start = dict((ts.literal("CONFIG") if ts else None) or ctx.task.config)
    entries = ts.space_entries() if ts else None
    space = dict((ts.literal("SPACE") if ts else None) or {})
    if ts is not None and not space and entries is None and ts.computed("SPACE"):  # evaluated by load_task
        space, entries = dict(ctx.task.space), list(ctx.task.space_configs) or None
    allowed = points(start, entries) if entries else []
    if allowed:
        space = domains(entries)  # type: ignore[arg-type]
    derived = not space and bool(start)
    if derived:
        space = derive_space(start, _constexprs(ts))
    config = {k: v for k, v in (start | dict(ctx.best_config)).items() if k in start}
    return Parent(source=source, start=start, config=config, space=space, derived=derived, points=allowed)


def _constexprs(ts: TaskSource | None) -> list[str]:
    if ts is None:
        return []
    out = []
    for fn in ts.tree.body:
        if isinstance(fn, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in fn.decorator_list):
            out += [a.arg for a in fn.args.args if a.annotation is not None and "constexpr" in ast.unparse(
                a.annotation)]
    return out


def _transforms_of(changes: list[ChangeDescription]) -> list[str]:
    return [c.transform for c in changes if c.change == "transform"]


def transform_changes(spec: TransformSpec, finding: str) -> list[ChangeDescription]:
    """One change per value of the parameters the config search cannot tune (no constexpr); constexpr
    parameters start at their default and are tuned afterwards through the candidate's SPACE."""
    free = [p for p in spec.params if not p.constexpr]
    combos: list[dict[str, Scalar]] = [{}]
    for p in free:
        combos = [c | {p.name: v} for c in combos for v in p.domain]
    return [ChangeDescription(change="transform", transform=spec.name, params=c,
                              rationale=f"{finding}: transformation {spec.name} ({spec.summary})")
            for c in combos]


def _preferred(changes: list[ChangeDescription], spec: TransformSpec, est: Effect) -> list[ChangeDescription]:
    """A transformation's parameter sets, the one the estimate prefers first (else its defaults), then
    the rest in domain order."""
    want = est.params or {p.name: p.default for p in spec.params}

    def misses(ch: ChangeDescription) -> int:
        return sum(1 for k, v in want.items() if k in ch.params and ch.params[k] != v)

    return sorted(changes, key=misses)


def _trivial(kept: dict[str, Scalar], params: dict[str, Scalar], est: Effect) -> bool:
    """`params` differs from a set already proposed only in parameters the estimate says reach the same."""
    diff = {k for k in params if params[k] != kept.get(k)}
    return bool(diff) and diff <= set(est.same_for)


class RulesPolicy:
    name = "rules"

    def __init__(self, options: SearchOptions | None = None) -> None:
        self.options = options or SearchOptions()

    def problem(self, ctx: PlannerContext, parent: Parent | None = None) -> Problem:
        parent = parent or parent_of(ctx)
        return Problem(
            config=dict(parent.config),
            space=dict(parent.space),
            points=list(parent.points),
            full_shape=dict(ctx.task.shapes.get("full", {})),
            other_shapes=other_shapes(ctx.task),
            dtype=ctx.task.dtype,
            dot=ctx.has_dot,
            findings=[f.pattern for f in ctx.findings],
            programs=dict(ctx.programs),
            constraints=list(ctx.constraints),
        )

    async def propose(self, ctx: PlannerContext) -> Plan:
        return self.plan(ctx)

    def _transforms(self, ctx: PlannerContext, parent: Parent, tried: set[tuple], notes: list[str],
                    ) -> tuple[list[CandidatePlan], list[CandidatePlan]]:
        """For each finding, the table's transformations that answer it and apply to the parent (stacked
        on the best candidate's changes, with the best config carried over), plus the programs-adding ones
        where the grid estimate finds idle SMs although the decomposer (at the start config) did not.

        Ranked by what each is estimated to change (services/planner/effects.py): an estimated gain first
        (largest first), then those with no estimate (finding order), then those estimated to change
        nothing; each transformation's preferred parameters before any transformation's other ones. In the
        first round of a transformation, parameter sets the estimate says reach the same are left out.
        Returns (ranked, unlikely): those estimated to change nothing come after the config candidates."""
        seen: set[str] = set(_transforms_of(ctx.best_changes))
        problem = self.problem(ctx, parent)
        asked: list[tuple[str, str, TransformSpec]] = []  # (pattern, where, spec)
        for f in ctx.findings:
            for spec in answering(f.pattern):
                if spec.name not in seen:
                    seen.add(spec.name)
                    asked.append((f.pattern, f"{f.pattern} @ {', '.join(f.locations[:2])}", spec))
        for spec in answering("small_grid"):
            if spec.name not in seen and (effect(spec, problem).factor or 1.0) > 1.0:
                seen.add(spec.name)
                asked.append(("small_grid", "small_grid: estimated from the launch grid, not found at the start",
                              spec))
        carry = config_changes(parent.start, parent.config)
        ranked: list[tuple[tuple, CandidatePlan, Effect]] = []
        for i, (pattern, where, spec) in enumerate(asked):
            est = effect(spec, problem)
            first_round = not any(spec.name in _transforms_of(a.changes) for a in ctx.attempts)
            tier = 1 if est.factor is None else 0 if est.factor > 1.0 else 2
            kept: list[dict[str, Scalar]] = []
            refused: set[str] = set()
            for ch in _preferred(transform_changes(spec, pattern), spec, est):
                if first_round and any(_trivial(k, dict(ch.params), est) for k in kept):
                    continue
                got = apply_transform(parent.source, spec.name, dict(ch.params))
                if isinstance(got, Refused):
                    if got.reason not in refused:
                        refused.add(got.reason)
                        notes.append(f"{pattern}: {spec.name} refused: {got.reason}"[:200])
                    continue
                full = ctx.best_changes + [ch]
                if tuple(msgspec_key(c) for c in full) in tried:
                    continue
                key = (bool(kept), tier, -(est.factor or 0.0), i)
                kept.append(dict(ch.params))
                at = config_changes(parent.start, est.config) if est.config else carry
                ranked.append((key, CandidatePlan(changes=full + at, rationale=f"{where}: {spec.name}"), est))
        ranked.sort(key=lambda r: r[0])
        out: list[CandidatePlan] = []
        unlikely: list[CandidatePlan] = []
        for n, (_, cand, est) in enumerate(ranked, 1):
            nothing = est.factor is not None and est.factor <= 1.0
            how = ("no estimate" if est.factor is None else "estimated to change nothing, after the configs"
                   if nothing else f"estimated x{est.factor:.2g} on the limit it lifts")
            cand.rationale += f"; ranked {n} of {len(ranked)} transformations ({how}: {est.why})"
            (unlikely if nothing else out).append(cand)
        return out, unlikely

    def plan(self, ctx: PlannerContext) -> Plan:
        notes: list[str] = []
        candidates: list[CandidatePlan] = []
        tried_sources = {
            tuple(msgspec_key(c) for c in a.changes if c.change not in _CONFIG_KINDS) for a in ctx.attempts
        }
        parent = parent_of(ctx)
        src = parent.source.splitlines()
        ranked, unlikely = self._transforms(ctx, parent, tried_sources, notes)
        code: list[CandidatePlan] = list(ranked)  # source changes, best first; configs join them below
        for f in ctx.findings:
            rule = RULES.get(f.pattern)
            if rule is None:
                if not set(f.transformations) <= set(_CONFIG_KINDS):
                    notes.append(f"{f.pattern}: no deterministic rule (left to the llm policy)")
                continue
            changes = rule(ctx, f, src)
            if changes is None:
                notes.append(f"{f.pattern}: rule precondition does not hold")
                continue
            full = ctx.best_changes + changes
            if tuple(msgspec_key(c) for c in full) in tried_sources:
                continue
            code.append(
                CandidatePlan(
                    changes=full + config_changes(parent.start, parent.config),
                    rationale=f"{f.pattern} @ {', '.join(f.locations[:2])}",
                )
            )
        # configs of the current parent's source only: a config measured on another source (before a
        # transform added its knob) is not a point of this search
        history = [(a.config, search_score(a)) for a in ctx.attempts
                   if _transforms_of(a.changes) == _transforms_of(ctx.best_changes)]
        if not any(config_key(c) == config_key(parent.config) for c, _ in history):
            # the start is never re-proposed; on the task's own source, once a speedup was measured, it is
            # the measured 1.0x every speedup is relative to (so the search can step around it)
            start = 1.0 if not _transforms_of(ctx.best_changes) and _scored(history) and all(
                a.score_name == "speedup" for a in ctx.attempts if search_score(a) is not None) else None
            history.append((dict(parent.config), start))
        p = self.problem(ctx, parent)
        if parent.derived:
            notes.append(f"no SPACE in the task: searching one derived from CONFIG ({', '.join(parent.space)})")
        configs = next_configs(p, history, self.options) if parent.space else []
        # only when nothing passed: passes without a score mean no GPU here, and more seeds would not change that
        if (parent.space and not configs and not _scored(history) and ctx.attempts
                and all(a.status == "fail" for a in ctx.attempts)):
            configs = after_failures(p, history, self.options)
            notes.append(f"every config so far failed: {len(configs)} more seeds")
        # The search answers the findings a config change can fix; say which, with their line references,
        # so the evidence chain links each config candidate to its diagnosis.
        addressed = [f"{f.pattern} @ {', '.join(Path(x).name for x in f.locations[:2])}" for f in ctx.findings
                     if set(f.transformations) & set(_CONFIG_KINDS)]
        searched: list[CandidatePlan] = []
        for cfg in configs:
            why = "seed" if not _scored(history) else "neighbour of the best"
            rationale = f"config search ({why})" + (f" for {'; '.join(addressed)}" if addressed else "")
            changes = [msgspec.structs.replace(c, rationale=c.rationale or rationale)
                       for c in config_changes(parent.start, cfg)]
            searched.append(CandidatePlan(changes=ctx.best_changes + changes, rationale=rationale))
        candidates += alternate(code, searched) + unlikely
        measured = sum(1 for _, v in history if v is not None)
        analysis = (
            f"{len(ctx.findings)} findings; {measured} measured of {len(history)} tried configs; "
            f"{len(configs)} new configs" + ("; " + "; ".join(notes) if notes else "")
        )
        return Plan(analysis=analysis, candidates=candidates, done=not candidates, policy=self.name)


_CONFIG_KINDS = ("set_constexpr", "set_num_warps", "set_num_stages", "set_maxnreg")


def alternate(code: list[CandidatePlan], configs: list[CandidatePlan]) -> list[CandidatePlan]:
    """Source changes and config candidates taken in turn, each list in its own order. The verifier
    measures a candidate at a time and a job's wall budget reaches only its first few (2-4 of 5-11 in H200
    runs r38-r40), so neither kind may starve the other: on the irregular GEMM (r39, r40) five
    transformations at the task's poor start config came before the first config seed, and none of the
    configs was measured; on d64 attention the first config seed won (3.59x) where the transformation at
    the start config did not (0.99x)."""
    out: list[CandidatePlan] = []
    for i in range(max(len(code), len(configs))):
        out += code[i:i + 1] + configs[i:i + 1]
    return out


def msgspec_key(c: ChangeDescription) -> tuple:
    return (c.change, c.target, c.value, c.search, c.replace, c.hint, c.transform, tuple(sorted(c.params.items())))


def search_score(a: Attempt) -> float | None:
    """The score the config search may use: a pass's, and a full-layer failure's whose only reason is a
    gain too small to accept (a measured point, slower or not significantly faster). H200 r53: the captured
    rms_norm's one config ran at 0.900x, counted as unmeasured, and the job ended with 20 configs untried.
    A correctness, static or impossible-speedup failure measures nothing the search should follow."""
    if a.status == "pass":
        return a.score
    if a.status == "fail" and a.layer == "full" and a.score is not None and a.reasons and all(
            r.startswith("full: no significant gain") for r in a.reasons):
        return a.score
    return None


def _scored(history: list[tuple[dict, float | None]]) -> bool:
    return any(v is not None for _, v in history)

