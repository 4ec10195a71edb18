"""Split a reduction loop over programs, with a deterministic second pass: SPLIT_K programs share one
output tile, each running a contiguous slice of the kernel's reduction loop (a GEMM's K loop, a column
sum's walk down the rows) and storing its fp32 partial result to its own slab of a partials buffer;
a second Triton kernel then sums the slabs in one fixed order, so the result is the same every run
(no atomics). More programs for a kernel whose output tiles do not fill the GPU (tall-skinny GEMMs,
column reductions with wide column blocks, small grids). SPLIT_K = 1 is the original work split; the
config search tunes it.

Precondition: in the kernel, a top-level `for k in range(0, STOP, STEP)` loop that adds into
accumulators (`acc += v`, `acc = acc + v` or `acc = tl.dot(a, b, acc)`) started at tl.zeros(...) before
it, every other value it carries over iterations a `p += invariant` pointer update; exactly one tl.store,
after the loop, of a value linear in the accumulators (acc, acc.to(T), tl.sum(acc, axis=...)), its
pointer from one pointer parameter; grid axis 1 (or 2 when axis 1 is taken) unused; launch passes that
parameter a tensor created in launch() by torch.empty/zeros (contiguous) and a tuple-literal grid of one
or two axes.
"""

from __future__ import annotations

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Param, Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="split_k",
    summary="split a reduction loop (GEMM K, column-sum rows) over SPLIT_K programs per output tile; "
            "fp32 partials summed in a fixed order",
    answers=["small_grid", "tail_effect", "latency_bound"],
    params=[Param(name="split", domain=[1, 2, 4, 8], default=4, constexpr="SPLIT_K",
                  doc="programs per output tile, each with 1/SPLIT_K of the reduction loop")],
    precondition="top-level loop range(0, STOP, STEP) adding into tl.zeros accumulators; one tl.store "
                 "after it of a value linear in them; its output made in launch()",
)


def _assigned_in(node: cst.CSTNode) -> set[str]:
    out = set()
    for a in C.collect(node, cst.Assign):
        for t in a.targets:
            out |= {n.value for n in C.collect(t.target, cst.Name)}
    for a in C.collect(node, cst.AugAssign):
        out |= {n.value for n in C.collect(a.target, cst.Name)}
    return out


def _names(node: cst.CSTNode) -> list[str]:
    return [n.value for n in C.collect(node, cst.Name)]


def _sum_update(stmt: cst.CSTNode) -> tuple[str, cst.CSTNode] | None:
    """(acc, the added value) when `stmt` is `acc += v`, `acc = acc + v`, `acc = v + acc` or
    `acc = tl.dot(a, b, acc)` (`acc=acc`) with v free of acc; else None."""
    if isinstance(stmt, cst.AugAssign) and isinstance(stmt.operator, cst.AddAssign) and isinstance(
            stmt.target, cst.Name):
        acc, added = stmt.target.value, stmt.value
    elif (isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name)):
        acc, v = stmt.targets[0].target.value, stmt.value
        if isinstance(v, cst.BinaryOperation) and isinstance(v.operator, cst.Add):
            if isinstance(v.left, cst.Name) and v.left.value == acc:
                added = v.right
            elif isinstance(v.right, cst.Name) and v.right.value == acc:
                added = v.left
            else:
                return None
        elif isinstance(v, cst.Call) and C.is_tl(v, "dot") and len(v.args) == 3 and isinstance(
                v.args[2].value, cst.Name) and v.args[2].value.value == acc and (
                v.args[2].keyword is None or v.args[2].keyword.value == "acc"):
            added = cst.Tuple([cst.Element(v.args[0].value), cst.Element(v.args[1].value)])
        else:
            return None
    else:
        return None
    return None if acc in _names(added) else (acc, added)


def _reduction_loop(kn: str, stmts: list[cst.BaseStatement], params: list[str],
                    ) -> tuple[cst.For, set[str], list[cst.AugAssign]]:
    """The top-level range loop that adds into accumulators: (loop, accumulators, pointer updates).
    Refuses a loop that carries anything else over its iterations (a running max does not split)."""
    loops = [s for s in stmts if isinstance(s, cst.For) and isinstance(s.iter, cst.Call)
             and C.code(s.iter.func) in ("range", "tl.range")]

    def zeros(init: cst.BaseExpression | None) -> bool:
        return isinstance(init, cst.Call) and C.is_tl(init, "zeros")

    for loop in loops:
        i = stmts.index(loop)
        before = {a.targets[0].target.value: a.value for s in stmts[:i] for a in C.collect(s, cst.Assign)
                  if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name)}
        varying = _assigned_in(loop.body) | set(_names(loop.target))
        # `p += invariant` on a name that does not start at tl.zeros is a pointer update, not a sum
        updates = [u for s in C.collect(loop.body, cst.BaseSmallStatement) if (u := _sum_update(s))
                   and (zeros(before.get(u[0])) or not isinstance(s, cst.AugAssign) or set(_names(u[1])) & varying)]
        if updates:
            break
    else:
        raise TransformError(f"{kn} has no top-level `for k in range(0, STOP, STEP)` loop adding into an "
                             "accumulator (`acc += v` or `acc = tl.dot(a, b, acc)`)")
    if not isinstance(loop.target, cst.Name):
        raise TransformError(f"{kn}: the reduction loop's target must be one name")
    accs = {a for a, _ in updates}
    for acc in sorted(accs):
        if not zeros(before.get(acc)):
            raise TransformError(f"{kn}: the accumulator {acc} does not start at tl.zeros(...) before the loop "
                                 "(every split would add its start value again)")
        uses = _names(loop.body).count(acc)
        n_updates = sum(1 for a, _ in updates if a == acc)
        per = 1 if any(isinstance(s, cst.AugAssign) and C.code(s.target) == acc
                       for s in C.collect(loop.body, cst.AugAssign)) else 2
        if n_updates != 1 or uses != per:
            raise TransformError(f"{kn}: the loop reads the accumulator {acc} other than to add to it once "
                                 "per iteration (a partial sum cannot stand for it there)")
    bumps = [b for b in C.collect(loop.body, cst.AugAssign) if not (isinstance(b.target, cst.Name)
                                                                     and b.target.value in accs)]
    inside = _assigned_in(loop.body)
    for b in bumps:
        if not isinstance(b.operator, cst.AddAssign) or _assigned_in(b.value) or (
                set(_names(b.value)) & (inside | {loop.target.value})):
            raise TransformError(f"{kn}: loop update `{C.code(b).strip()}` is not `p += loop-invariant`")
    carried = (inside & (set(before) | set(params))) - accs - {C.code(b.target) for b in bumps}
    if carried:
        raise TransformError(f"{kn}: the loop carries {sorted(carried)} over its iterations, which is not a sum "
                             "(a split loop starts each slice afresh)")
    return loop, accs, bumps


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    k = C.kernel(mod, kernel_name)
    kn = k.name.value
    body = k.body
    assert isinstance(body, cst.IndentedBlock)
    stmts = list(body.body)
    loop, accs, bumps = _reduction_loop(kn, stmts, C.param_names(k))
    it = loop.iter
    assert isinstance(it, cst.Call) and isinstance(loop.target, cst.Name)
    pos = [a for a in it.args if a.keyword is None]
    if len(pos) != 3 or C.code(pos[0].value) != "0":
        raise TransformError(f"{kn}: the reduction loop must be range(0, STOP, STEP)")
    stop, step = C.code(pos[1].value), C.code(pos[2].value)
    stores = [c for c in C.collect(k, cst.Call) if C.is_tl(c, "store")]
    if len(stores) != 1 or stmts.index(loop) > max(
            i for i, s in enumerate(stmts) if stores[0] in C.collect(s, cst.Call)):
        raise TransformError(f"{kn} must have exactly one tl.store, after the reduction loop ({len(stores)} found)")
    ptr_expr = stores[0].args[0].value
    names = {n.value for n in C.collect(ptr_expr, cst.Name)}
    defs = {a.targets[0].target.value: a.value for s in stmts for a in C.collect(s, cst.Assign)
            if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name)}
    for n in list(names):
        if n in defs:
            names |= {x.value for x in C.collect(defs[n], cst.Name)}
    out_params = [p for p in C.param_names(k) if p in names and p.endswith("ptr")]
    if len(out_params) != 1:
        raise TransformError(f"{kn}: the store's pointer must come from one *_ptr parameter (found {out_params})")
    out_param = out_params[0]
    later = _assigned_in(cst.Module(body=stmts[stmts.index(loop) + 1:])) & accs
    if later:
        raise TransformError(f"{kn} changes the accumulator {sorted(later)} after the loop (only a sum of it "
                             "distributes over the split)")

    def is_acc(e: cst.BaseExpression) -> bool:  # acc, acc.to(dtype), tl.sum(acc, axis): a sum of partials equals it
        if isinstance(e, cst.Name):
            return e.value in accs or (e.value in defs and e.value not in accs and is_acc(defs[e.value]))
        if isinstance(e, cst.Call) and C.is_tl(e, "sum") and e.args:
            return is_acc(e.args[0].value)
        return (isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value == "to"
                and is_acc(e.func.value))
    if len(stores[0].args) < 2 or not is_acc(stores[0].args[1].value):
        raise TransformError(f"{kn} stores more than a sum of the accumulator (an epilogue such as a bias or an "
                             "activation does not distribute over a split-K sum)")
    axis_ids = {C.code(c.args[0].value) for c in C.collect(k, cst.Call)
                if (C.is_tl(c, "program_id") or C.is_tl(c, "num_programs")) and c.args}
    axis = "1" if "1" not in axis_ids else "2" if "2" not in axis_ids else None
    if axis is None:
        raise TransformError(f"{kn} uses grid axes 0-2: no axis left for the K split")
    knob = C.constexpr_name(mod, kn, "SPLIT_K")
    slab = C.fresh(mod, "split_stride")
    sid, per, lo, hi = (C.fresh(mod, b) for b in ("split_id", "k_per_split", "k_start", "k_stop"))
    var = loop.target.value
    pre = C.stmts(
        f"# split reduction (kpilot transform split_k): program {sid} of {knob} runs loop steps [{lo}, {hi})\n"
        f"{sid} = tl.program_id({axis})\n"
        f"{per} = tl.cdiv(tl.cdiv({stop}, {step}), {knob}) * {step}\n"
        f"{lo} = {sid} * {per}\n"
        f"{hi} = min({stop}, {lo} + {per})\n"
        + "".join(f"{C.code(b.target)} += ({lo} // {step}) * ({C.code(b.value)})\n" for b in bumps))
    new_loop = loop.with_changes(iter=it.with_changes(args=[
        pos[0].with_changes(value=cst.Name(lo)), pos[1].with_changes(value=cst.Name(hi)), *it.args[2:]]))
    store = stores[0]
    new_store = store.with_changes(args=[store.args[0].with_changes(
        value=cst.parse_expression(f"({C.code(ptr_expr)}) + {sid} * {slab}")), *store.args[1:]])
    i = stmts.index(loop)
    new_body = [*stmts[:i], *pre, new_loop, *stmts[i + 1:]]
    k2 = k.with_changes(body=body.with_changes(body=new_body))
    k2 = k2.deep_replace(C.collect(k2, cst.Call)[[C.code(c) for c in C.collect(k2, cst.Call)].index(
        C.code(store))], new_store)
    k2 = k2.with_changes(params=C._append_param(k2.params, slab, None, None))  # type: ignore[union-attr]
    if var in {n.value for n in C.collect(cst.Module(body=[*stmts[i + 1:]]), cst.Name)}:
        raise TransformError(f"{kn} reads the loop variable {var} after the loop")
    index = C.param_names(k).index(out_param)
    mod = mod.deep_replace(k, k2)  # type: ignore[assignment]
    for fn in list(mod.body):
        if not isinstance(fn, cst.FunctionDef) or C.is_jit(fn):
            continue
        calls = [c for c in C.collect(fn, cst.Call) if isinstance(c.func, cst.Subscript) and C.call_name(c) == kn]
        if not calls:
            continue
        fbody = fn.body
        assert isinstance(fbody, cst.IndentedBlock)
        line = next((s for s in fbody.body if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1
                     and isinstance(s.body[0], cst.Expr) and s.body[0].value in calls), None)
        if line is None or len(calls) != 1:
            raise TransformError(f"{fn.name.value}() must launch {kn} once, as a statement of its own body")
        c = calls[0]
        args = list(c.args)
        kw = next((a for a in args if a.keyword and a.keyword.value == out_param), None)
        target = kw or (args[index] if index < len(args) and args[index].keyword is None else None)
        if target is None or not isinstance(target.value, cst.Name):
            raise TransformError(f"launch passes no plain name for {out_param}")
        out = target.value.value
        made = [a for a in C.collect(fn, cst.Assign) if any(isinstance(t.target, cst.Name) and t.target.value == out
                                                            for t in a.targets)]
        if not made or not any(C.code(m.value).startswith(("torch.empty(", "torch.zeros(")) for m in made):
            raise TransformError(f"{fn.name.value}(): {out} is not created there by torch.empty/zeros (contiguous)")
        g = c.func.slice[0].slice  # type: ignore[attr-defined]
        g = g.value if isinstance(g, cst.Index) else g
        assigns = {a.targets[0].target.value: a for a in C.collect(fn, cst.Assign)
                   if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name)}
        gnode = assigns[g.value].value if isinstance(g, cst.Name) and g.value in assigns else g
        if not isinstance(gnode, cst.Tuple) or len(gnode.elements) != int(axis):
            raise TransformError(f"launch grid {C.code(gnode)!r} must be a tuple of {axis} axes (the split is axis "
                                 f"{axis})")
        els = list(gnode.elements)
        els[-1] = els[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        new_g = gnode.with_changes(elements=[*els, cst.Element(cst.Name(knob))])
        partials = C.fresh(mod, "partials")
        new_c = c.with_changes(func=c.func.with_changes(slice=[c.func.slice[0].with_changes(  # type: ignore[attr-defined]
            slice=cst.Index(new_g) if not isinstance(g, cst.Name) else c.func.slice[0].slice)]),  # type: ignore[attr-defined]
            args=[a.with_changes(value=cst.Name(partials)) if a is target else a for a in args])
        new_c = C._append_arg(new_c, slab)
        new_c = new_c.with_changes(args=[*new_c.args[:-1], new_c.args[-1].with_changes(
            value=cst.parse_expression(f"{out}.numel()"))])
        # a zero-filled output may be stored only in part: its partials then start at zero too
        alloc = "torch.zeros" if any(C.code(m.value).startswith("torch.zeros(") for m in made) else "torch.empty"
        before = C.stmts(f"{partials} = {alloc}(({knob}, *{out}.shape), device={out}.device, "
                         f"dtype=torch.float32)\n")
        mod, second = C.slab_sum_kernel(mod, kn)
        after = C.stmts(f"# the fixed-order second pass over the {knob} slabs: one Triton kernel\n"
                        f"{second}[(triton.cdiv({out}.numel(), {C.SECOND_PASS_BLOCK}),)]({partials}, {out}, "
                        f"{out}.numel(), SLABS={knob}, BLOCK={C.SECOND_PASS_BLOCK})\n")
        nf = fn.deep_replace(line, cst.FlattenSentinel([*before, line.deep_replace(c, new_c), *after]))
        if isinstance(g, cst.Name):
            nf = nf.deep_replace(C.collect(nf, cst.Assign)[[C.code(a) for a in C.collect(nf, cst.Assign)].index(
                C.code(assigns[g.value]))], assigns[g.value].with_changes(value=new_g))
        mod = mod.deep_replace(fn, nf)  # type: ignore[assignment]
        break
    else:
        raise TransformError(f"no `{kn}[grid](...)` launch call found")
    return C.add_constexpr(mod, kn, knob, params["split"], SPEC.params[0].domain).code


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
