"""Chunk max for looped (chunked) online softmax / logsumexp rows: a loop that keeps a running max per
lane (`m_new = tl.maximum(m, x)`, then `s = s * tl.exp(m - m_new) + tl.exp(x - m_new)`) pays the rescale
exponential for every element, two exps per element in all. Taking each chunk's max first (one block
reduction, `tl.max(x, axis=0)`) makes the running max one scalar per row: the rescale `tl.exp(m - m_new)`
is then one exp per chunk, and the sums stay per lane (no extra reduction in the loop). After the loop
every lane's max is set to the row's running max, so the code after it (the usual `tl.max(m)` and
`tl.sum(s * tl.exp(m - row_max))`) reads the same values it combined before. Stack exp2_fold on it for
exp2 (the kernel's BLOCK is the chunk; the config search tunes it already).

Precondition: a top-level loop of the kernel holds `N = tl.maximum(M, X)` and `M = N`, with M set before
the loop by a 1-D `tl.full((BLOCK,), ...)`; inside the loop M appears only there and as `M - R` inside
tl.exp / tl.exp2, and N (or R = tl.where(... N ...) guarding -inf) only as the subtrahend inside
tl.exp / tl.exp2 or in R's definition; after the loop M's lanes are combined (tl.max(M, axis=0): they
are chunks of one row, not one row each as in attention) and M is read only that way or inside
tl.exp(M - ...) (the reference of the sums), since its lanes hold the row's max after the rewrite.
"""

from __future__ import annotations

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="chunk_max",
    summary="online softmax/logsumexp loop: each chunk's max first, so the running max is one scalar and "
            "the rescale is one exp per chunk instead of one per element",
    answers=["exp_instead_of_exp2", "compute_throughput_bound", "roofline_far_below"],
    precondition="a loop with `m_new = tl.maximum(m, x)` and `m = m_new`, m a 1-D tl.full before it, used "
                 "in the loop only as exp(m - m_new)",
)

_EXPS = ("tl.exp", "tl.exp2", "tl.math.exp", "tl.math.exp2")


def _name_assign(s: cst.BaseStatement) -> tuple[str, cst.BaseExpression] | None:
    if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign):
        a = s.body[0]
        if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name):
            return a.targets[0].target.value, a.value
    return None


class _Uses(cst.CSTVisitor):
    """Where names occur in a loop body: as `A - B` inside an exp call (left / right), elsewhere."""

    def __init__(self, names: set[str], any_right: bool = False) -> None:
        self.names, self.depth, self.any_right = names, 0, any_right
        self.left: dict[str, int] = {n: 0 for n in names}
        self.right: dict[str, int] = {n: 0 for n in names}
        self.all: dict[str, int] = {n: 0 for n in names}

    def visit_Call(self, node: cst.Call) -> None:
        if C.code(node.func) in _EXPS:
            self.depth += 1

    def leave_Call(self, node: cst.Call) -> None:
        if C.code(node.func) in _EXPS:
            self.depth -= 1

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if self.depth and isinstance(node.operator, cst.Subtract):
            if (isinstance(node.left, cst.Name) and node.left.value in self.names
                    and (self.any_right or isinstance(node.right, cst.Name) and node.right.value in self.names)):
                self.left[node.left.value] += 1  # M - ref
            if isinstance(node.right, cst.Name) and node.right.value in self.names:
                self.right[node.right.value] += 1

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.all:
            self.all[node.value] += 1


class _Rename(cst.CSTTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=self.new) if original.value == self.old else updated


def _find(kn: str, stmts: list[cst.BaseStatement]) -> tuple[cst.For, str, str, int, cst.Call]:
    """(loop, M, N, index of the max statement in the loop body, the tl.maximum call)."""
    why = ""
    for loop in (s for s in stmts if isinstance(s, cst.For)):
        body = loop.body
        if not isinstance(body, cst.IndentedBlock):
            continue
        i = stmts.index(loop)
        before = {na[0]: na[1] for s in stmts[:i] if (na := _name_assign(s))}
        assigns = [(j, na) for j, s in enumerate(body.body) if (na := _name_assign(s))]
        copies = {(t, v.value) for _, (t, v) in assigns if isinstance(v, cst.Name)}  # M = N
        for j, (n, v) in assigns:
            if not (isinstance(v, cst.Call) and C.is_tl(v, "maximum") and len(v.args) == 2):
                continue
            for a in v.args:
                m = a.value.value if isinstance(a.value, cst.Name) else ""
                if (m, n) not in copies:
                    continue
                init = before.get(m)
                if not (isinstance(init, cst.Call) and C.is_tl(init, "full") and init.args
                        and isinstance(init.args[0].value, cst.Tuple) and len(init.args[0].value.elements) == 1):
                    why = (f"{kn}: the running max {m} is not set before the loop by a 1-D tl.full((BLOCK,), ...) "
                           "(a scalar max is already one per chunk)")
                    continue
                return loop, m, n, j, v
    raise TransformError(why or f"{kn} has no loop keeping a per-lane running max (`m_new = tl.maximum(m, x)` "
                                "then `m = m_new`, an online softmax/logsumexp)")


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    k = C.kernel(mod, kernel_name)
    kn = k.name.value
    body = k.body
    assert isinstance(body, cst.IndentedBlock)
    stmts = list(body.body)
    loop, m, n, j, mx = _find(kn, stmts)
    lbody = loop.body
    assert isinstance(lbody, cst.IndentedBlock)
    # R = tl.where(cond on N, const, N): the -inf guard of the reference the exps subtract
    guards = {t for s in lbody.body if (na := _name_assign(s)) and (t := na[0]) != n
              and isinstance(na[1], cst.Call) and C.is_tl(na[1], "where")
              and n in (used := {x.value for a in na[1].args for x in C.collect(a.value, cst.Name)})
              and used <= {n, "float"}}
    refs = {n} | guards
    uses = _Uses({m} | refs)
    loop.body.visit(uses)
    # M: once in the max, once as the copy's target, the rest as exp(M - ref)
    if uses.all[m] != 2 + uses.left[m] or uses.left[m] == 0:
        raise TransformError(f"{kn}: the loop reads the running max {m} other than as tl.exp({m} - {n}) (the "
                             "rescale); a scalar chunk max cannot stand for it there")
    for r in refs:
        defs = 1 if r in guards else 0
        own = 1 if r == n else 0  # N: its own assignment and the copy `M = N`
        where = sum(1 for g in guards for s in lbody.body if (na := _name_assign(s)) and na[0] == g
                    for a in na[1].args for x in C.collect(a.value, cst.Name) if x.value == r)
        if uses.all[r] != defs + 2 * own + where + uses.right[r]:
            raise TransformError(f"{kn}: the loop uses {r} other than as the max subtracted inside tl.exp")
    after = cst.Module(body=stmts[stmts.index(loop) + 1:])
    if any(x.value == n for x in C.collect(after, cst.Name)):
        raise TransformError(f"{kn} reads {n} after the loop (it is one scalar per chunk after the rewrite)")
    # after the loop M must be read as the reference of its sums (tl.max(M), exp(M - ...)): each lane then
    # holds the row's max, not its own, and only such a reading gives the same result
    late = _Uses({m}, any_right=True)
    after.visit(late)
    maxes = sum(1 for c in C.collect(after, cst.Call) if C.is_tl(c, "max") and c.args
                and isinstance(c.args[0].value, cst.Name) and c.args[0].value.value == m)
    if not maxes:
        raise TransformError(f"{kn} never combines the lanes of {m} after the loop (tl.max({m}, axis=0)): its "
                             "lanes are not one row's chunk (attention keeps one max per query row), so one "
                             "max over them is not that row's max")
    if late.all[m] != maxes + late.left[m]:
        raise TransformError(f"{kn} reads the running max {m} after the loop other than as tl.max({m}) or "
                             f"tl.exp({m} - ...) (its lanes hold the row's max after the rewrite)")
    mc = C.fresh(mod, f"{m}_chunk")
    x = next(a for a in mx.args if not (isinstance(a.value, cst.Name) and a.value.value == m))
    new_mx = mx.with_changes(args=[
        a.with_changes(value=cst.parse_expression(f"tl.max({C.code(a.value)}, axis=0)")) if a is x else a
        for a in mx.args])
    stmt = lbody.body[j]
    new_stmt = stmt.deep_replace(mx, new_mx)
    new_stmt = new_stmt.with_changes(trailing_whitespace=cst.TrailingWhitespace(
        whitespace=cst.SimpleWhitespace("  "),
        comment=cst.Comment("# chunk max first (kpilot transform chunk_max)"),
        newline=cst.Newline()))  # type: ignore[union-attr]
    new_lbody = lbody.with_changes(body=[*lbody.body[:j], new_stmt, *lbody.body[j + 1:]])
    new_loop = loop.with_changes(body=new_lbody.visit(_Rename(m, mc)))
    pre = C.stmts(f"{mc} = tl.max({m}, axis=0)  # the running max of all lanes: one scalar per row\n")
    post = C.stmts(f"# every lane holds the row's running max, so the code after the loop reads {m} as before\n"
                   f"{m} = tl.maximum({m}, {mc})\n")
    i = stmts.index(loop)
    new_k = k.with_changes(body=body.with_changes(body=[*stmts[:i], *pre, new_loop, *post, *stmts[i + 1:]]))
    return mod.deep_replace(k, new_k).code  # type: ignore[union-attr]


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
