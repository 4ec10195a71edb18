"""Two-stage fixed-order reduction replacing a contended atomic: every program doing
`tl.atomic_add(out_ptr, v)` on the same address stores v to its own slot `out_ptr + program` of a
partials buffer instead, and a second Triton kernel adds the partials to the address in one fixed order
(the same order every run: the sum no longer depends on which program's atomic landed first).

Precondition: exactly one `tl.atomic_add(P, v)` statement in the kernel, P a pointer parameter used as
is (one address for all programs), no mask, its result unused; the kernel is launched by an expression
statement `kernel[grid](...)` whose grid is a tuple literal (or a name bound to one) in that function.
"""

from __future__ import annotations

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="two_stage_reduce",
    summary="per-program partials + one fixed-order second pass instead of atomics on one address",
    answers=["atomic_contention", "atomics_in_loop"],
    precondition="one unmasked tl.atomic_add(ptr_param, v) statement; grid a tuple literal",
)


def _atomics(k: cst.FunctionDef) -> list[cst.Call]:
    return [c for c in C.collect(k, cst.Call) if C.code(c.func).startswith("tl.atomic_")]


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    k = C.kernel(mod, kernel_name)
    kn = k.name.value
    atomics = _atomics(k)
    if len(atomics) != 1 or not C.is_tl(atomics[0], "atomic_add"):
        raise TransformError(f"{kn} has {len(atomics)} atomics; two_stage_reduce rewrites exactly one atomic_add")
    call = atomics[0]
    stmt = next((s for s in C.collect(k, cst.Expr) if s.value is call), None)
    if stmt is None:
        raise TransformError(f"{kn} uses the atomic_add's result; only a bare `tl.atomic_add(...)` statement "
                             "can become a store")
    pos = [a for a in call.args if a.keyword is None]
    if len(call.args) != 2 or len(pos) != 2:
        raise TransformError(f"{kn}: tl.atomic_add has a mask or options; needs exactly (pointer, value)")
    ptr = pos[0].value
    names = C.param_names(k)
    if not isinstance(ptr, cst.Name) or ptr.value not in names:
        raise TransformError(f"{kn}: the atomic's address {C.code(ptr)!r} is not a pointer parameter as is "
                             "(programs must all hit one address)")
    index = names.index(ptr.value)
    ndim = 0
    for fn in list(mod.body):
        if not isinstance(fn, cst.FunctionDef) or C.is_jit(fn):
            continue
        calls = [c for c in C.collect(fn, cst.Call) if isinstance(c.func, cst.Subscript) and C.call_name(c) == kn]
        if not calls:
            continue
        body = fn.body
        assert isinstance(body, cst.IndentedBlock)
        line = next((s for s in body.body if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1
                     and isinstance(s.body[0], cst.Expr) and s.body[0].value in calls), None)
        if line is None or len(calls) != 1:
            raise TransformError(f"{fn.name.value}() must launch {kn} once, as a statement of its own body")
        c = calls[0]
        g = c.func.slice[0].slice  # type: ignore[attr-defined]
        g = g.value if isinstance(g, cst.Index) else g
        assigns = {a.targets[0].target.value: a.value for a in C.collect(fn, cst.Assign)
                   if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name)}
        g = assigns.get(g.value, g) if isinstance(g, cst.Name) else g
        if not isinstance(g, cst.Tuple) or not g.elements:
            raise TransformError(f"launch grid {C.code(g)!r} is not a tuple literal")
        programs = " * ".join(f"({C.code(e.value)})" for e in g.elements)
        ndim = len(g.elements)
        args = list(c.args)
        kw = next((a for a in args if a.keyword and a.keyword.value == ptr.value), None)
        target = kw if kw is not None else (args[index] if index < len(args) and args[index].keyword is None
                                            else None)
        if target is None:
            raise TransformError(f"cannot find the argument passed for {ptr.value} in the launch call")
        out = C.code(target.value)
        partials = C.fresh(mod, "partials")
        new_c = c.with_changes(args=[a.with_changes(value=cst.Name(partials)) if a is target else a for a in args])
        before = C.stmts(f"# two-stage reduction (kpilot transform two_stage_reduce): one partial per program,\n"
                         f"# added in one fixed order after the kernel instead of atomics on {out}\n"
                         f"{partials} = torch.zeros({programs}, device={out}.device, dtype=torch.float32)\n")
        mod, second = C.total_kernel(mod, kn)
        after = C.stmts(f"{second}[(1,)]({partials}, {out}, {partials}.numel(), BLOCK={C.SECOND_PASS_BLOCK})\n")
        new_line = line.deep_replace(c, new_c)
        i = list(body.body).index(line)
        nb = body.with_changes(body=[*body.body[:i], *before, new_line, *after, *body.body[i + 1:]])
        mod = mod.deep_replace(fn, fn.with_changes(body=nb))  # type: ignore[assignment]
        break
    else:
        raise TransformError(f"no `{kn}[grid](...)` launch call found")
    slot = ["tl.program_id(0)", "tl.program_id(1) * tl.num_programs(0)",
            "tl.program_id(2) * tl.num_programs(0) * tl.num_programs(1)"][: max(1, min(ndim, 3))]
    index_expr = " + ".join(slot)
    store = cst.parse_expression(f"tl.store({ptr.value} + {index_expr if ndim == 1 else f'({index_expr})'}, x)")
    store = store.with_changes(args=[store.args[0], store.args[1].with_changes(value=pos[1].value)])
    k = C.kernel(mod, kn)
    call = _atomics(k)[0]
    mod = mod.deep_replace(k, k.deep_replace(call, store))  # type: ignore[assignment]
    if "import torch\n" not in mod.code:
        raise TransformError("the task does not `import torch` (the partials buffer is a torch tensor)")
    return mod.code


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
