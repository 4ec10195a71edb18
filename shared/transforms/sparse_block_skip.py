"""Skip inactive blocks: a block-sparse attention kernel whose key loop visits every key block and masks
the inactive ones to -inf (dense work) branches over them instead.

    for kb in range(NB):                       for kb in range(NB):
        active = tl.load(layout + kb)              active = tl.load(layout + kb)
        for j in ...:                  ->          if active != 0:
            ... tl.where(... & (active != 0),          for j in ...:
                         s, float("-inf"))                 <unchanged>

Exact: when the scalar term T is false every score of the block's tiles is -inf, so the online softmax
adds nothing for them (p = 0, alpha = 1 or a row still at -inf); the loads the block would issue are the
work saved.

Precondition: a loop nested in a loop, whose every `tl.where(cond, s, -inf)` on the scores has a
conjunct T (`x != 0`, `x > 0`, a name) that the inner loop neither assigns nor derives from a tl.arange:
one scalar per outer iteration, read from memory (a block layout). The inner loop stores nothing.
"""

from __future__ import annotations

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms import key_loop as KL
from shared.transforms.base import Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="sparse_block_skip",
    summary="block-sparse attention: branch over key blocks whose scalar layout term masks every score",
    answers=["k_loop_masked_every_iteration", "compute_throughput_bound", "roofline_far_below"],
    precondition="an inner key loop whose -inf score masks all share a scalar term read once per outer "
                 "iteration (a block layout flag); no store in the inner loop",
)


def _neg_inf(e: cst.BaseExpression) -> bool:
    return C.code(e).replace(" ", "") in ('float("-inf")', "float('-inf')", '-float("inf")', "-float('inf')")


def _assigned(node: cst.CSTNode) -> set[str]:
    return {t.target.value for a in C.collect(node, cst.Assign) for t in a.targets
            if isinstance(t.target, cst.Name)}


def _vector(name: str, defs: dict[str, cst.BaseExpression], depth: int = 0) -> bool:
    """Whether `name` may be a tensor of more than one element (its definition reaches a tl.arange, or
    the analysis cannot tell)."""
    e = defs.get(name)
    if e is None:
        return False  # a kernel parameter or a loop variable: a scalar
    if depth > 8:
        return True
    if any(C.is_tl(c, "arange") or C.is_tl(c, "zeros") or C.is_tl(c, "full") for c in C.collect(e, cst.Call)):
        return True
    return any(_vector(n, defs, depth + 1) for n in KL.names(e) if n != name and n != "tl")


def _find(k: cst.FunctionDef) -> tuple[cst.For, cst.For, cst.BaseExpression]:
    kdefs = KL.defs(k)
    why = "no loop nested directly in another loop"
    for outer in C.collect(k.body, cst.For):
        assert isinstance(outer.body, cst.IndentedBlock)
        for st in outer.body.body:
            if isinstance(st, cst.If) and isinstance(st.body, cst.IndentedBlock) and any(
                    isinstance(x, cst.For) for x in st.body.body):
                why = f"the inner loop already sits under a block branch `if {C.code(st.test)}:`"
        for inner in outer.body.body:
            if not isinstance(inner, cst.For):
                continue
            inner_names = _assigned(inner) | KL.names(inner.target)
            if any(C.is_tl(c, "store") or C.code(c.func).startswith("tl.atomic")
                   for c in C.collect(inner, cst.Call)):
                why = "the inner loop stores (skipping it would drop the stores)"
                continue
            masks = {t.target.value: a.value for a in C.collect(inner.body, cst.Assign) for t in a.targets
                     if isinstance(t.target, cst.Name)}
            wheres = [c for c in C.collect(inner.body, cst.Call)
                      if C.is_tl(c, "where") and len(c.args) == 3 and _neg_inf(c.args[2].value)]
            if not wheres:
                why = "the inner loop masks no score to -inf"
                continue

            def conj(e: cst.BaseExpression, seen: frozenset[str] = frozenset(),
                     masks: dict[str, cst.BaseExpression] = masks) -> list[cst.BaseExpression]:
                out: list[cst.BaseExpression] = []
                for t in KL.terms(e):
                    t = t.with_changes(lpar=[], rpar=[]) if hasattr(t, "lpar") else t
                    if isinstance(t, cst.Name) and t.value in masks and t.value not in seen:
                        out += conj(masks[t.value], seen | {t.value}, masks)
                    else:
                        out.append(t)
                return out
            common: dict[str, cst.BaseExpression] | None = None
            for w in wheres:
                here = {C.code(t): t for t in conj(w.args[0].value)}
                common = here if common is None else {c: t for c, t in common.items() if c in here}
            scalar = [t for t in (common or {}).values()
                      if KL.names(t) and not (KL.names(t) & inner_names)
                      and not any(_vector(n, kdefs) for n in KL.names(t))
                      and KL.names(t) & _assigned(outer.body)]
            if not scalar:
                why = ("the inner loop's -inf masks share no scalar term set once per outer iteration "
                       "(a block layout flag)")
                continue
            return outer, inner, scalar[0]
    raise TransformError(f"{k.name.value}: {why}")


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    k = KL.launched(mod, kernel_name)
    _, inner, term = _find(k)
    head = C.stmts(
        f"# kpilot transform sparse_block_skip: a block where `{C.code(term)}` is false has every score\n"
        "# masked to -inf; branch over it instead of visiting its tiles.\n"
        f"if {C.code(term)}:\n    pass\n")[0]
    assert isinstance(head, cst.If)
    guarded = head.with_changes(body=head.body.with_changes(body=[inner.with_changes(leading_lines=[])]),
                                leading_lines=[*inner.leading_lines, *head.leading_lines])
    new_k = k.deep_replace(inner, guarded)
    return mod.deep_replace(k, new_k).code  # type: ignore[union-attr]


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
