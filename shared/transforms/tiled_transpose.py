"""Coalesced tiled transpose for a Triton kernel that moves one row per program: its load and store both
walk a block vector `offs`, contiguous on one side (`... + offs`) and a stride apart on the other
(`offs * S + row`), so the strided side touches one sector per lane. The program takes TILE rows instead
of one: `row` becomes a TILE vector, each access a 2-D tile, the contiguous side [TILE, BLOCK] and the
strided side [BLOCK, TILE] (contiguous along the rows now), joined by tl.trans (Triton stages the
transpose through shared memory). The grid axis of `row` counts cdiv(rows, TILE) programs; the original
count reaches the kernel for the bound check of the last tile.

Precondition: a straight-line kernel (no loops, branches, reductions, dots or atomics) with one tl.load
and one tl.store whose pointers are sums of terms; a `row = tl.program_id(a)` used only in those pointers,
bare on one side and multiplied by a stride on the other; one block vector (from tl.arange) in both
pointers, bare on the other side and multiplied on the first; the launch grid a tuple literal.
"""

from __future__ import annotations

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Param, Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="tiled_transpose",
    summary="TILE rows per program: 2-D tile load + tl.trans so the strided side of a transpose coalesces",
    answers=["uncoalesced_strided_access", "transposed_access_no_staging"],
    params=[Param(name="tile", domain=[16, 32, 64], default=32, constexpr="TILE",
                  doc="rows per program: the contiguous run length of the formerly strided side")],
    precondition="straight-line kernel, one tl.load + one tl.store; `row = tl.program_id(a)` bare on one "
                 "side and strided on the other, a tl.arange vector the other way round; grid a tuple",
)

_BANNED = {"sum", "max", "min", "reduce", "dot", "cumsum", "cumprod", "argmax", "argmin", "xor_sum",
           "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg", "atomic_and", "atomic_or",
           "atomic_xor", "trans", "permute", "reshape", "view", "broadcast_to", "expand_dims", "histogram",
           "sort", "flip", "join", "split", "num_programs"}


def _terms(e: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Add):
        return _terms(e.left) + _terms(e.right)
    return [e]


def _factors(e: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Multiply):
        return _factors(e.left) + _factors(e.right)
    if isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value == "to":
        return _factors(e.func.value)  # row.to(tl.int64) counts as row
    return [e]


def _names(e: cst.CSTNode) -> set[str]:
    attrs = {id(a.attr) for a in C.collect(e, cst.Attribute)}
    return {n.value for n in C.collect(e, cst.Name) if id(n) not in attrs}


def _role(ptr: cst.BaseExpression, var: str) -> str:
    """"unit" when `var` is a bare additive term of the pointer, "strided" when a term multiplies it."""
    hits = [t for t in _terms(ptr) if var in _names(t)]
    if len(hits) != 1:
        raise TransformError(f"pointer `{C.code(ptr)}` uses {var} in {len(hits)} additive terms (needs one)")
    fs = _factors(hits[0])
    if len(fs) == 1 and isinstance(fs[0], cst.Name) and fs[0].value == var:
        return "unit"
    if any(isinstance(f, cst.Name) and f.value == var for f in fs) and len(fs) > 1:
        return "strided"
    raise TransformError(f"pointer term `{C.code(hits[0])}` is not {var} or {var} * stride")


class _Shape(cst.CSTTransformer):
    """Index `row` and the block vectors for one side: row -> row[:, None] or row[None, :], the vectors the
    other way round."""

    def __init__(self, row: str, vectors: set[str], row_first: bool) -> None:
        self.row, self.vectors, self.row_first = row, vectors, row_first

    def _sub(self, name: cst.Name, first: bool) -> cst.BaseExpression:
        return cst.parse_expression(f"{name.value}[:, None]" if first else f"{name.value}[None, :]")

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:  # type: ignore[override]
        if updated.value == self.row:
            return self._sub(updated, self.row_first)
        if updated.value in self.vectors:
            return self._sub(updated, not self.row_first)
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)


def _arg(call: cst.Call, pos: int, kw: str) -> cst.Arg | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == kw:
            return a
    plain = [a for a in call.args if a.keyword is None]
    return plain[pos] if len(plain) > pos else None


def _access(call: cst.Call, shape: _Shape, bound: str, mask_pos: int) -> cst.Call:
    """The load/store with its pointer and mask indexed by `shape` and the row bound check added."""
    ptr = _arg(call, 0, "pointer")
    assert ptr is not None
    row_ok = f"{shape.row}{'[:, None]' if shape.row_first else '[None, :]'} < {bound}"
    args = []
    mask_done = False
    for a in call.args:
        if a is ptr:
            a = a.with_changes(value=a.value.visit(shape))
        elif a is _arg(call, mask_pos, "mask"):
            m = a.value.visit(shape)
            a = a.with_changes(value=cst.parse_expression(f"({C.code(m)}) & ({row_ok})"))
            mask_done = True
        args.append(a)
    if not mask_done:
        if any(a.keyword is None for a in call.args[mask_pos:]) or _arg(call, mask_pos + 1, "other"):
            raise TransformError(f"`{C.code(call)}` passes positional arguments after the pointer without a mask")
        args = C._append_arg(call.with_changes(args=args), "mask").args
        args = [*args[:-1], args[-1].with_changes(value=cst.parse_expression(row_ok))]
    return call.with_changes(args=args)


def _grid(fn: cst.FunctionDef, kernel_name: str) -> list[cst.Tuple]:
    assigns = {}
    for s in C.collect(fn, cst.Assign):
        if len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Name):
            assigns[s.targets[0].target.value] = s.value
    out = []
    for c in C.collect(fn, cst.Call):
        if isinstance(c.func, cst.Subscript) and C.call_name(c) == kernel_name:
            g = c.func.slice[0].slice
            g = g.value if isinstance(g, cst.Index) else g
            g = assigns.get(g.value, g) if isinstance(g, cst.Name) else g
            if not isinstance(g, cst.Tuple) or not g.elements:
                raise TransformError(f"launch grid {C.code(g)!r} is not a tuple literal")
            out.append(g)
    return out


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    k = C.kernel(mod, kernel_name)
    kn = k.name.value
    body = k.body
    assert isinstance(body, cst.IndentedBlock)
    for s in body.body:
        if not isinstance(s, cst.SimpleStatementLine):
            raise TransformError(f"{kn} has a `{C.code(s).split()[0]}` block: tiled_transpose reads straight-line "
                                 "kernels only")
    calls = C.collect(k, cst.Call)
    banned = sorted({c.func.attr.value for c in calls if isinstance(c.func, cst.Attribute)
                     and c.func.attr.value in _BANNED})
    if banned:
        raise TransformError(f"{kn} calls {banned}: tiled_transpose rewrites elementwise copies only")
    loads = [c for c in calls if C.is_tl(c, "load")]
    stores = [c for c in calls if C.is_tl(c, "store")]
    if len(loads) != 1 or len(stores) != 1:
        raise TransformError(f"{kn} has {len(loads)} tl.load and {len(stores)} tl.store calls (needs one each)")
    load, store = loads[0], stores[0]
    if any(c is load for c in C.collect(store, cst.Call)):
        raise TransformError("the load is nested inside the store: assign it to a name first")
    lptr, sptr = _arg(load, 0, "pointer"), _arg(store, 0, "pointer")
    if lptr is None or sptr is None or _arg(store, 1, "value") is None:
        raise TransformError("the load or the store has no pointer / value argument")

    # program ids and block vectors, in statement order
    pids: dict[str, tuple[int, cst.Assign]] = {}
    vectors: set[str] = set()
    for s in body.body:
        for a in [x for x in s.body if isinstance(x, cst.Assign)]:  # type: ignore[union-attr]
            if len(a.targets) != 1 or not isinstance(a.targets[0].target, cst.Name):
                continue
            name = a.targets[0].target.value
            v = a.value
            if isinstance(v, cst.Call) and C.is_tl(v, "program_id"):
                axis = C.code(v.args[0].value) if v.args else "0"
                if axis.isdigit():
                    pids[name] = (int(axis), a)
            elif (any(C.is_tl(c, "arange") for c in C.collect(v, cst.Call)) or _names(v) & vectors) and not (
                    C.collect(v, cst.Call) and any(C.is_tl(c, "load") for c in C.collect(v, cst.Call))):
                vectors.add(name)
    rows = [p for p in pids if p in _names(lptr.value) and p in _names(sptr.value)]
    if len(rows) != 1:
        raise TransformError(f"needs one `row = tl.program_id(a)` used directly in both the load and the store "
                             f"pointer; found {rows or 'none'}")
    row = rows[0]
    axis, row_assign = pids[row]
    uses = [n for n in C.collect(k, cst.Name) if n.value == row]
    in_ptrs = [n for n in C.collect(lptr.value, cst.Name) if n.value == row] + \
        [n for n in C.collect(sptr.value, cst.Name) if n.value == row]
    if len(uses) != len(in_ptrs) + 1:
        raise TransformError(f"{row} is used outside the load and store pointers (it would become a vector)")
    vec = sorted(vectors & _names(lptr.value) & _names(sptr.value))
    if len(vec) != 1:
        raise TransformError(f"needs one block vector (from tl.arange) in both pointers; found {vec or 'none'}")
    v = vec[0]
    lrow, lvec, srow, svec = _role(lptr.value, row), _role(lptr.value, v), _role(sptr.value, row), _role(sptr.value, v)
    if (lvec, lrow) == ("unit", "strided") and (svec, srow) == ("strided", "unit"):
        load_is_row_side = True
    elif (lvec, lrow) == ("strided", "unit") and (svec, srow) == ("unit", "strided"):
        load_is_row_side = False
    else:
        raise TransformError(f"the load is {lvec} in {v} and {lrow} in {row}, the store {svec} and {srow}: a "
                             f"transpose has {v} bare on one side and {row} bare on the other")

    tile = C.constexpr_name(mod, kn, "TILE")
    bound = C.fresh(mod, "n_rows")
    mask_pos = {id(load): 1, id(store): 2}
    # the row side is [TILE, BLOCK] (row first), the strided side [BLOCK, TILE]
    new_load = _access(load, _Shape(row, vectors, row_first=load_is_row_side), bound, mask_pos[id(load)])
    new_store = _access(store, _Shape(row, vectors, row_first=not load_is_row_side), bound, mask_pos[id(store)])
    if load_is_row_side:
        val = _arg(new_store, 1, "value")
        assert val is not None
        new_args = [a.with_changes(value=cst.parse_expression(f"tl.trans({C.code(a.value)})"))
                    if a is val else a for a in new_store.args]
        new_store = new_store.with_changes(args=new_args)
        loaded: cst.BaseExpression = new_load
    else:
        loaded = cst.Call(func=cst.parse_expression("tl.trans"), args=[cst.Arg(value=new_load)])
    new_row = row_assign.with_changes(value=cst.parse_expression(
        f"tl.program_id({axis}) * {tile} + tl.arange(0, {tile})"))

    class _Swap(cst.CSTTransformer):
        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
            if original is load:
                return loaded
            if original is store:
                return new_store
            return updated

        def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
            return new_row if original is row_assign else updated

    k2 = k.visit(_Swap())
    assert isinstance(k2, cst.FunctionDef)
    k2 = k2.with_changes(params=C._append_param(k2.params, bound, None, None))
    mod = mod.deep_replace(k, k2)  # type: ignore[assignment]
    done = 0
    for fn in list(mod.body):
        if not isinstance(fn, cst.FunctionDef) or C.is_jit(fn):
            continue
        sites = _grid(fn, kn)
        if not sites:
            continue
        new_fn = fn
        for g in sites:
            if len(g.elements) <= axis:
                raise TransformError(f"the launch grid {C.code(g)} has no axis {axis}")
            el = g.elements[axis]
            extent = C.code(el.value)
            els = list(g.elements)
            els[axis] = el.with_changes(value=cst.parse_expression(f"triton.cdiv({extent}, {tile})"))
            new_fn = new_fn.deep_replace(g, g.with_changes(elements=els))  # type: ignore[assignment]
            for c in C.collect(new_fn, cst.Call):
                if isinstance(c.func, cst.Subscript) and C.call_name(c) == kn:
                    arg = C._append_arg(c, bound)
                    arg = arg.with_changes(args=[*arg.args[:-1], arg.args[-1].with_changes(
                        value=cst.parse_expression(extent))])
                    new_fn = new_fn.deep_replace(c, arg)  # type: ignore[assignment]
            done += 1
        mod = mod.deep_replace(fn, new_fn)  # type: ignore[assignment]
    if not done:
        raise TransformError(f"no `{kn}[grid](...)` launch call found")
    if "import triton\n" not in mod.code:
        raise TransformError("the task does not `import triton` (needed for triton.cdiv in the grid)")
    return C.add_constexpr(mod, kn, tile, params["tile"], SPEC.params[0].domain).code


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
