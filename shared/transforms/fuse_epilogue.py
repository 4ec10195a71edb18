"""Fuse an elementwise consumer kernel into its producer's epilogue (cross-kernel): launch() runs

    producer[grid](..., t, ..., t.stride(0), ...)      # stores t once per element
    y = torch.empty_like(t)
    consumer[grid2](t, y, n, BLOCK=...)                 # x = load(t + offs); y = f(x); store(y + offs, ...)

and becomes one launch of the producer whose store applies f to the value it stored and writes y, so t
never makes the round trip through global memory and the second launch is gone:

    x = VALUE.to(tl.float32)                            # the consumer's load, now the producer's value
    y = 0.5 * x * (...)                                 # the consumer's statements, names kept or fresh
    tl.store(ptrs, y.to(c_ptr.dtype.element_ty), mask)  # the producer's own pointers and mask

Precondition: both launches are statements of the same block, the producer before the consumer; t is
allocated in launch() and the consumer's only input; the consumer is elementwise: one tl.load through
t's pointer and one tl.store through its output pointer, both at the same offsets `x_ptr + offs`, the
statements from the load to the store using nothing of the consumer but the loaded value, their own
names and the output pointer's dtype; y is `torch.empty_like(t)` (same shape, dtype and strides); the
producer stores through t's pointer once, at its top level.
"""

from __future__ import annotations

import itertools

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="fuse_epilogue",
    summary="fuse an elementwise consumer kernel into its producer's store (one launch, no HBM round trip)",
    answers=["missed_fusion_elementwise", "global_memory_round_trip", "launch_bound_tiny_kernel"],
    params=[],  # the first producer -> consumer pair in launch order that the precondition admits
    precondition="producer then elementwise consumer launched in one block; the intermediate allocated in "
                 "launch() and read only by the consumer; y = torch.empty_like(t)",
)


def _launch_stmt(s: cst.BaseStatement, kernels: set[str]) -> tuple[str, cst.Call] | None:
    if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Expr):
        c = s.body[0].value
        if isinstance(c, cst.Call) and isinstance(c.func, cst.Subscript) and C.call_name(c) in kernels:
            return C.call_name(c), c
    return None


def _arg(call: cst.Call, k: cst.FunctionDef, text: str) -> str | None:
    params = C.param_names(k)
    for i, a in enumerate(call.args):
        if C.code(a.value) == text:
            return a.keyword.value if a.keyword is not None else (params[i] if i < len(params) else None)
    return None


def _assign_of(s: cst.BaseStatement) -> tuple[str, cst.BaseExpression] | None:
    if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign):
        a = s.body[0]
        if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name):
            return a.targets[0].target.value, a.value
    return None


class _Rename(cst.CSTTransformer):
    def __init__(self, names: dict[str, str], load: cst.Call | None = None,
                 value: cst.BaseExpression | None = None) -> None:
        self.names, self.load, self.value = names, load, value

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if self.load is not None and original.deep_equals(self.load):
            if self.value is None:
                return updated
            simple = isinstance(self.value, cst.Name | cst.Attribute | cst.Call | cst.Subscript)
            return cst.parse_expression(C.code(self.value) if simple else f"({C.code(self.value)})")
        return updated

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=self.names[updated.value]) if updated.value in self.names else updated


def _consumer_body(mod: cst.Module, k: cst.FunctionDef, in_ptr: str, out_ptr: str,
                   ) -> tuple[list[cst.BaseStatement], cst.Call, cst.BaseExpression]:
    """The consumer's statements from its load to its store, the load call, the stored value."""
    kn = k.name.value
    body = k.body
    assert isinstance(body, cst.IndentedBlock)
    if not all(isinstance(s, cst.SimpleStatementLine) for s in body.body):
        raise TransformError(f"{kn} has loops or branches; fuse_epilogue fuses straight-line elementwise kernels")
    loads = [c for c in C.collect(k, cst.Call) if C.is_tl(c, "load")]
    stores = [c for c in C.collect(k, cst.Call) if C.is_tl(c, "store")]
    if len(loads) != 1 or len(stores) != 1:
        raise TransformError(f"{kn} has {len(loads)} loads and {len(stores)} stores; fuse_epilogue needs one "
                             "of each (an elementwise map of the intermediate)")
    load, store = loads[0], stores[0]

    def offsets(ptr_expr: cst.BaseExpression, ptr: str) -> str | None:
        e = ptr_expr
        if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Add) and C.code(e.left) == ptr:
            return C.code(e.right)
        return None
    lo, so = offsets(load.args[0].value, in_ptr), offsets(store.args[0].value, out_ptr)
    if lo is None or so is None or lo != so:
        raise TransformError(f"{kn} does not load `{in_ptr} + offs` and store `{out_ptr} + offs` at the same "
                             "offsets (not elementwise)")
    stmts = list(body.body)
    i = next(n for n, s in enumerate(stmts) if any(c is load for c in C.collect(s, cst.Call)))
    j = next(n for n, s in enumerate(stmts) if any(c is store for c in C.collect(s, cst.Call)))
    if j <= i or j != len(stmts) - 1:
        raise TransformError(f"{kn}'s store is not its last statement after the load")
    taken = stmts[i:j]
    before = {a[0] for s in stmts[:i] if (a := _assign_of(s))}
    own = {a[0] for s in taken if (a := _assign_of(s))}
    if len(own) != len(taken):
        raise TransformError(f"{kn}: the statements from the load to the store are not all `name = ...`")
    params = set(C.param_names(k))
    for s in [*taken, stmts[j]]:
        for n in C.collect(s, cst.Name):
            inside_load = any(n is m for m in C.collect(load, cst.Name))
            if inside_load or n.value in own or n.value == "tl":
                continue
            if n.value == out_ptr and s is stmts[j]:
                continue  # the store's own pointer
            if n.value in before or n.value in params:
                if s is stmts[j] and any(n is m for a in store.args[2:] for m in C.collect(a.value, cst.Name)):
                    continue  # the mask: replaced by the producer's
                if s is stmts[j] and any(n is m for m in C.collect(store.args[0].value, cst.Name)):
                    continue
                if n.value == out_ptr:
                    continue
                raise TransformError(f"{kn}'s elementwise map uses {n.value} (an index or a parameter), not only "
                                     "the loaded value: it cannot run in the producer's epilogue")
    return taken, load, store.args[1].value


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    kernels = {k.name.value: k for k in C.kernels(mod)}
    for fn in mod.body:
        if not isinstance(fn, cst.FunctionDef) or C.is_jit(fn):
            continue
        for block in C.collect(fn, cst.IndentedBlock):
            stmts = list(block.body)
            launches = [(n, got) for n, s in enumerate(stmts) if (got := _launch_stmt(s, set(kernels)))]
            for (pi, (pname, pcall)), (ci, (cname, ccall)) in itertools.pairwise(launches):
                if kernel_name and kernel_name not in (pname, cname):
                    continue
                tensor_args = [C.code(a.value) for a in ccall.args if isinstance(a.value, cst.Name)]
                shared = [t for t in tensor_args if any(C.code(a.value) == t for a in pcall.args)]
                if not shared:
                    continue
                t = shared[0]
                return _fuse(mod, fn, block, pi, ci, pname, pcall, cname, ccall, t, kernels)
    raise TransformError("no producer launch followed, in the same block, by an elementwise consumer launch "
                         "that reads a tensor the producer was given")


def _fuse(mod: cst.Module, fn: cst.FunctionDef, block: cst.IndentedBlock, pi: int, ci: int, pname: str,
          pcall: cst.Call, cname: str, ccall: cst.Call, t: str, kernels: dict[str, cst.FunctionDef]) -> str:
    prod, cons = kernels[pname], kernels[cname]
    stmts = list(block.body)
    allocs = {a[0]: a[1] for s in C.collect(fn, cst.SimpleStatementLine) if (a := _assign_of(s))}
    if t not in allocs or not (isinstance(allocs[t], cst.Call) and C.code(allocs[t].func).startswith("torch.")):
        raise TransformError(f"{t} is not allocated in {fn.name.value}() (fuse_epilogue drops its round trip)")
    outs = [C.code(a.value) for a in ccall.args if isinstance(a.value, cst.Name) and C.code(a.value) != t
            and C.code(a.value) in allocs]
    if len(outs) != 1:
        raise TransformError(f"{cname}'s launch does not write one tensor allocated in {fn.name.value}()")
    y = outs[0]
    if C.code(allocs[y]) != f"torch.empty_like({t})":
        raise TransformError(f"{y} is not `torch.empty_like({t})`: the producer would write it with {t}'s shape, "
                             "dtype and strides")
    uses = [n for n in C.collect(fn, cst.Name) if n.value == t]
    in_args = [n for c in (pcall, ccall) for a in c.args for n in C.collect(a.value, cst.Name) if n.value == t]
    in_alloc = [n for n in C.collect(allocs[y], cst.Name) if n.value == t]
    if len(uses) != len(in_args) + len(in_alloc) + 1:
        raise TransformError(f"{t} is used outside the two launches (returned or read by other code)")
    in_ptr, out_ptr = _arg(ccall, cons, t), _arg(ccall, cons, y)
    p_ptr = _arg(pcall, prod, t)
    if in_ptr is None or out_ptr is None or p_ptr is None:
        raise TransformError(f"cannot match {t} and {y} to the kernels' parameters")
    taken, load, value = _consumer_body(mod, cons, in_ptr, out_ptr)
    # the producer's store through t's pointer, at its top level
    pbody = prod.body
    assert isinstance(pbody, cst.IndentedBlock)
    defs = {a[0]: a[1] for s in pbody.body if (a := _assign_of(s))}
    tops = [s for s in pbody.body if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1
            and isinstance(s.body[0], cst.Expr) and isinstance(s.body[0].value, cst.Call)
            and C.is_tl(s.body[0].value, "store")]
    all_stores = [c for c in C.collect(prod, cst.Call) if C.is_tl(c, "store")]

    def through(c: cst.Call) -> bool:
        e = c.args[0].value
        names = {n.value for n in C.collect(e, cst.Name)}
        names |= {n.value for v in names if v in defs for n in C.collect(defs[v], cst.Name)}
        return p_ptr in names
    mine = [s for s in tops if through(s.body[0].value)]  # type: ignore[attr-defined]
    if len(mine) != 1 or len([c for c in all_stores if through(c)]) != 1:
        raise TransformError(f"{pname} does not store through {p_ptr} exactly once at its top level")
    store_stmt = mine[0]
    store = store_stmt.body[0].value  # type: ignore[attr-defined]
    taken_names = {a[0] for s in taken if (a := _assign_of(s))}
    pnames = {n.value for n in C.collect(prod, cst.Name)}
    rename = {n: C.fresh(mod, n) if n in pnames else n for n in sorted(taken_names)}
    rename[out_ptr] = p_ptr
    stored = store.args[1].value
    new = [s.visit(_Rename(rename, load, stored)) for s in taken]
    new[0] = new[0].with_changes(leading_lines=[*new[0].leading_lines, cst.EmptyLine(comment=cst.Comment(
        f"# {cname}'s elementwise map fused into the store (kpilot transform fuse_epilogue)"))])
    result = value.visit(_Rename(rename))
    args = list(store.args)
    args[1] = args[1].with_changes(value=result)
    new_store = store_stmt.with_changes(body=[store_stmt.body[0].with_changes(value=store.with_changes(args=args))])
    i = list(pbody.body).index(store_stmt)
    nb = pbody.with_changes(body=[*pbody.body[:i], *new, new_store, *pbody.body[i + 1:]])
    mod = mod.deep_replace(prod, prod.with_changes(body=nb))  # type: ignore[assignment]
    # the launch: the producer writes y (allocated before it), the consumer's launch is gone
    fn_now = C.function(mod, fn.name.value)
    assert fn_now is not None
    blk = next(b for b in C.collect(fn_now, cst.IndentedBlock) if len(b.body) == len(stmts)
               and all(C.code(x) == C.code(s) for x, s in zip(b.body, stmts, strict=True)))
    body = list(blk.body)
    y_stmt = next(s for s in body if (a := _assign_of(s)) and a[0] == y)

    class _Swap(cst.CSTTransformer):
        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
            return updated.with_changes(value=y) if updated.value == t else updated
    p_stmt, c_stmt = body[pi], body[ci]
    new_p = p_stmt.visit(_Swap())
    out: list[cst.BaseStatement] = []
    for n, s in enumerate(body):
        if s is c_stmt or s is y_stmt:
            continue
        if n == pi:
            out.append(y_stmt.with_changes(leading_lines=[
                *y_stmt.leading_lines, cst.EmptyLine(comment=cst.Comment(
                    f"# {pname} writes {y} through {cname}'s map (kpilot transform fuse_epilogue)"))]))
            out.append(new_p)
        else:
            out.append(s)
    if body.index(y_stmt) > pi and body.index(y_stmt) > body.index(c_stmt):
        raise TransformError(f"{y} is allocated after {cname}'s launch")
    mod = mod.deep_replace(blk, blk.with_changes(body=out))  # type: ignore[assignment]
    if not C.launch_calls(mod, cname):
        mod = _drop_consumer(mod, fn.name.value, cname, ccall)
    return mod.code


def _drop_consumer(mod: cst.Module, launcher: str, cname: str, ccall: cst.Call) -> cst.Module:
    """The consumer is launched no more: out of KERNELS, and the knobs only its launch took (its block
    size) out of CONFIG, SPACE and launch()'s parameters, so the search does not tune a dead knob. Its
    definition stays (unused)."""
    ks = C.top_assign(mod, "KERNELS")
    if ks is None or not isinstance(ks[1].value, cst.Tuple):
        return mod
    els = [e for e in ks[1].value.elements if C.code(e.value) != cname]
    if not els or len(els) == len(ks[1].value.elements):
        return mod
    if len(els) == 1:
        els = [els[0].with_changes(comma=cst.Comma())]
    mod = mod.deep_replace(ks[1].value, ks[1].value.with_changes(elements=els))  # type: ignore[assignment]
    live = {p for k in C.kernels(mod) if k.name.value in {C.code(e.value) for e in els}
            for p in C.constexpr_params(k)}
    fn = C.function(mod, launcher)
    assert fn is not None
    knobs = [C.code(a.value) for a in ccall.args if a.keyword is not None and isinstance(a.value, cst.Name)]
    for knob in knobs:
        quoted = {f'"{knob}"', f"'{knob}'"}
        in_body = [n for n in C.collect(fn.body, cst.Name) if n.value == knob]
        strings = [x for x in C.collect(mod, cst.SimpleString) if x.value in quoted]
        keys = [e for name in ("CONFIG", "SPACE") if (d := C.top_assign(mod, name)) is not None
                and isinstance(d[1].value, cst.Dict) for e in d[1].value.elements
                if isinstance(e, cst.DictElement) and C.code(e.key) in quoted]
        if knob in live or in_body or len(strings) != len(keys) or knob not in C.param_names(fn):
            continue  # still used: by a kernel, by launch() or by constraint()
        for name in ("CONFIG", "SPACE"):
            d = C.top_assign(mod, name)
            if d is not None and isinstance(d[1].value, cst.Dict):
                kept = [e for e in d[1].value.elements
                        if not (isinstance(e, cst.DictElement) and C.code(e.key) in quoted)]
                if kept and len(kept) < len(d[1].value.elements):
                    last = d[1].value.elements[-1]
                    kept[-1] = kept[-1].with_changes(comma=last.comma)
                mod = mod.deep_replace(d[1].value, d[1].value.with_changes(elements=kept))  # type: ignore[assignment]
        fn = C.function(mod, launcher)
        assert fn is not None
        ps = [p for p in fn.params.params if p.name.value != knob]
        if ps:
            ps[-1] = ps[-1].with_changes(comma=fn.params.params[-1].comma)
        mod = mod.deep_replace(fn, fn.with_changes(params=fn.params.with_changes(params=ps)))  # type: ignore[assignment]
    return mod


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
