"""Even-K specialisation: the K loop's full tiles run unmasked along K, one masked tail iteration runs
the original body. `for k in range(0, K, BK): body` becomes

    for k in range(0, K - K % BK, BK): body without the mask terms that bound the tile by k
    if K % BK != 0:
        k = K - K % BK
        body

so the interior loads lose the K bound that kept them from 16-byte vector accesses (or cp.async), and
only the last partial tile pays the mask. Loop-carried values (the accumulator, advanced pointers) flow
from the interior into the tail unchanged.

Precondition: a `for v in range(0, STOP, STEP)` (or tl.range) loop in the kernel, STEP a constexpr or an
int literal, and a tl.load in its body whose mask is a conjunction (a & b & ...) with a term that names
v and a name of STOP (the tile bound `offs < STOP - v` / `v + offs < STOP`, offs < STEP).
"""

from __future__ import annotations

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="even_k",
    summary="peel the K loop: unmasked full tiles, one masked tail tile (even-K specialisation)",
    answers=["mask_blocks_vectorization", "scalar_global_access", "k_loop_not_pipelined"],
    precondition="for v in range(0, STOP, STEP) with a load mask term bounding the tile by v and STOP",
)


def _terms(e: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.BitAnd):
        return _terms(e.left) + _terms(e.right)
    return [e]


def _names(e: cst.CSTNode) -> set[str]:
    return {n.value for n in C.collect(e, cst.Name)}


def _join(terms: list[cst.BaseExpression]) -> cst.BaseExpression:
    out = terms[0]
    for t in terms[1:]:
        out = cst.BinaryOperation(left=out, operator=cst.BitAnd(whitespace_before=cst.SimpleWhitespace(" "),
                                                                  whitespace_after=cst.SimpleWhitespace(" ")),
                                  right=t)
    return out


class _Unmask(cst.CSTTransformer):
    """Drops the mask terms that name the loop variable and the loop's stop from tl.load calls."""

    def __init__(self, var: str, stop: set[str]) -> None:
        self.var, self.stop, self.dropped = var, stop, 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if not C.is_tl(original, "load"):
            return updated
        mask = next((a for a in updated.args if a.keyword and a.keyword.value == "mask"), None)
        if mask is None:
            return updated
        terms = _terms(mask.value)
        keep = [t for t in terms if not (self.var in _names(t) and _names(t) & self.stop)]
        if len(keep) == len(terms):
            return updated
        self.dropped += 1
        if keep:
            new_mask = mask.with_changes(value=_join([t.with_changes(lpar=t.lpar, rpar=t.rpar) for t in keep]))
            return updated.with_changes(args=[new_mask if a is mask else a for a in updated.args])
        args = [a for a in updated.args if not (a.keyword and a.keyword.value in ("mask", "other"))]
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(args=args)


def _loop(k: cst.FunctionDef, constexprs: list[str]) -> tuple[cst.For, str, cst.Call] | None:
    for f in C.collect(k, cst.For):
        it = f.iter
        if not (isinstance(it, cst.Call) and (C.code(it.func) in ("range", "tl.range"))):
            continue
        pos = [a for a in it.args if a.keyword is None]
        if len(pos) != 3 or C.code(pos[0].value) != "0" or not isinstance(f.target, cst.Name):
            continue
        step = C.code(pos[2].value)
        if not (step in constexprs or step.isdigit()):
            continue
        probe = _Unmask(f.target.value, _names(pos[1].value))
        f.body.visit(probe)
        if probe.dropped:
            return f, step, it
    return None


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    k = C.kernel(mod, kernel_name)
    found = _loop(k, C.constexpr_params(k))
    if found is None:
        raise TransformError(f"{k.name.value} has no `for v in range(0, STOP, STEP)` loop (STEP a constexpr) "
                             "whose loads mask the tile by v and STOP")
    loop, step, it = found
    var = loop.target.value  # type: ignore[attr-defined]
    pos = [a for a in it.args if a.keyword is None]
    stop = C.code(pos[1].value)
    full = f"({stop}) - ({stop}) % {step}" if not stop.isidentifier() else f"{stop} - {stop} % {step}"
    unmask = _Unmask(var, _names(pos[1].value))
    interior = loop.with_changes(
        iter=it.with_changes(args=[pos[0], pos[1].with_changes(value=cst.parse_expression(full)), *it.args[2:]]),
        body=loop.body.visit(unmask))
    tail = cst.parse_statement(f"if {stop} % {step} != 0:\n    {var} = {full}\n    pass\n")
    assert isinstance(tail, cst.If) and isinstance(loop.body, cst.IndentedBlock)
    tail = tail.with_changes(body=tail.body.with_changes(body=[tail.body.body[0], *loop.body.body]))
    comment = cst.EmptyLine(comment=cst.Comment(f"# masked tail tile (kpilot transform even_k): {var} = the last "
                                                f"partial {step}-wide step"))
    tail = tail.with_changes(leading_lines=[comment])
    new_k = k.deep_replace(loop, cst.FlattenSentinel([interior, tail]))
    return mod.deep_replace(k, new_k).code  # type: ignore[union-attr]


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
