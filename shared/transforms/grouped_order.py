"""GEMM grouped (swizzled) program order: `pid_m = pid // n; pid_n = pid % n` (row-major tiles) becomes the
Triton tutorial's GROUP_M order, so GROUP_M consecutive programs share B tiles (and a column of A tiles)
in L2. GROUP_M = 1 is the original order; the config search tunes GROUP_M.

Precondition: in the kernel body, `A = P // Q` and `B = P % Q` with the same P and Q, P the axis-0
program id, and axis 0 of every launch grid a product (tiles_m * tiles_n), so that num_programs(0) // Q
is the number of row tiles.
"""

from __future__ import annotations

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Param, Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="grouped_order",
    summary="swizzle the row-major tile order into GROUP_M-row groups for L2 reuse (GEMM)",
    answers=["poor_l2_reuse_no_grouped_order", "roofline_far_below"],
    params=[Param(name="group_m", domain=[1, 4, 8, 16], default=8, constexpr="GROUP_M",
                  doc="row tiles per group; 8 is the Triton tutorial's value")],
    precondition="`pid_m = pid // Q` and `pid_n = pid % Q` on the axis-0 program id, grid axis 0 = a product",
)


def _assign(stmt: cst.BaseStatement) -> tuple[str, cst.BaseExpression] | None:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0],
                                                                                         cst.Assign):
        a = stmt.body[0]
        if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name):
            return a.targets[0].target.value, a.value
    return None


def _is_pid0(expr: cst.BaseExpression, pid_names: set[str]) -> bool:
    if isinstance(expr, cst.Name):
        return expr.value in pid_names
    if isinstance(expr, cst.Call) and C.is_tl(expr, "program_id"):
        a = expr.args
        return bool(a) and C.code(a[0].value) in ("0",)
    return False


def _grid_axis0(mod: cst.Module, kernel_name: str) -> list[cst.BaseExpression]:
    """Axis 0 of each launch grid, resolving `grid = (...)` assignments in the launching function."""
    out = []
    for fn in mod.body:
        if not isinstance(fn, cst.FunctionDef) or C.is_jit(fn):
            continue
        assigns = {}
        for s in C.collect(fn, cst.Assign):
            if len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Name):
                assigns[s.targets[0].target.value] = s.value
        for c in C.collect(fn, cst.Call):
            if isinstance(c.func, cst.Subscript) and C.call_name(c) == kernel_name:
                g = c.func.slice[0].slice
                g = g.value if isinstance(g, cst.Index) else g
                g = assigns.get(g.value, g) if isinstance(g, cst.Name) else g
                if isinstance(g, cst.Tuple) and g.elements:
                    out.append(g.elements[0].value)
                else:
                    raise TransformError(f"launch grid {C.code(g)!r} is not a tuple literal; write it as "
                                         "(tiles_m * tiles_n, ...) for grouped_order to check its axis 0")
    return out


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    k = C.kernel(mod, kernel_name)
    body = k.body
    assert isinstance(body, cst.IndentedBlock)
    if any("GROUP" in n.value for n in C.collect(k, cst.Name)) or any(
        isinstance(c.func, cst.Name) and c.func.value == "min" or C.is_tl(c, "minimum")
        for c in C.collect(k, cst.Call)
    ):
        raise TransformError(f"{k.name.value} already computes a grouped order (GROUP_* / min of tile ids)")
    pid_names = {n for s in body.body if (a := _assign(s)) and _is_pid0(a[1], set()) for n in [a[0]]}
    div = mod_ = None
    for s in body.body:
        a = _assign(s)
        if a is None or not isinstance(a[1], cst.BinaryOperation) or not _is_pid0(a[1].left, pid_names):
            continue
        if isinstance(a[1].operator, cst.FloorDivide) and div is None:
            div = (s, a[0], a[1])
        elif isinstance(a[1].operator, cst.Modulo) and mod_ is None:
            mod_ = (s, a[0], a[1])
    if div is None or mod_ is None or C.code(div[2].left) != C.code(mod_[2].left) or C.code(
            div[2].right) != C.code(mod_[2].right):
        raise TransformError(f"{k.name.value} has no row-major tile mapping `pid_m = pid // Q; pid_n = pid % Q` "
                             "on tl.program_id(0)")
    axis0 = _grid_axis0(mod, k.name.value)
    if not axis0 or not all(isinstance(g, cst.BinaryOperation) and isinstance(g.operator, cst.Multiply)
                            for g in axis0):
        raise TransformError("grid axis 0 must be a product of the tile counts (e.g. cdiv(M, BM) * cdiv(N, BN))")
    group = C.constexpr_name(mod, k.name.value, "GROUP_M")
    value = params.get("group_m", SPEC.params[0].default)
    pid, q = C.code(div[2].left), C.code(div[2].right)
    names = {b: C.fresh(mod, b) for b in ("num_pid_slow", "num_pid_in_group", "group_id", "first_pid",
                                            "group_size")}
    slow, fast = div[1], mod_[1]
    text = (
        f"# grouped order (kpilot transform grouped_order): {group} row tiles share their B tiles in L2\n"
        f"{names['num_pid_slow']} = tl.num_programs(0) // ({q})\n"
        f"{names['num_pid_in_group']} = {group} * ({q})\n"
        f"{names['group_id']} = {pid} // {names['num_pid_in_group']}\n"
        f"{names['first_pid']} = {names['group_id']} * {group}\n"
        f"{names['group_size']} = min({names['num_pid_slow']} - {names['first_pid']}, {group})\n"
        f"{slow} = {names['first_pid']} + (({pid} % {names['num_pid_in_group']}) % {names['group_size']})\n"
        f"{fast} = ({pid} % {names['num_pid_in_group']}) // {names['group_size']}\n"
    )
    new = C.stmts(text)
    first, second = (div[0], mod_[0]) if body.body.index(div[0]) < body.body.index(mod_[0]) else (mod_[0], div[0])
    nb = C.replace_stmts(body, second, [])
    nb = C.replace_stmts(nb, first, new)
    mod = mod.deep_replace(k, k.with_changes(body=nb))  # type: ignore[assignment]
    mod = C.add_constexpr(mod, k.name.value, group, value, SPEC.params[0].domain)
    return mod.code


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
