"""LibCST helpers every transformation shares: find the task's kernels and launch call, add a tunable
constexpr end to end (kernel parameter, launch() parameter, the launch call's keyword, CONFIG and SPACE),
and name fresh variables. Layout and comments of everything not rewritten are kept byte for byte.
"""

from __future__ import annotations

import ast

import libcst as cst

from shared import space_list
from shared.messages import Scalar
from shared.transforms.base import TransformError


def parse(source: str) -> cst.Module:
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as e:
        raise TransformError(f"the task does not parse: {e.message} (line {e.raw_line})") from e


def code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def is_jit(fn: cst.FunctionDef) -> bool:
    return any("jit" in code(d.decorator) for d in fn.decorators)


def kernels(mod: cst.Module) -> list[cst.FunctionDef]:
    return [n for n in mod.body if isinstance(n, cst.FunctionDef) and is_jit(n)]


def function(mod: cst.Module, name: str) -> cst.FunctionDef | None:
    return next((n for n in mod.body if isinstance(n, cst.FunctionDef) and n.name.value == name), None)


def kernel(mod: cst.Module, name: str = "") -> cst.FunctionDef:
    """The named @triton.jit kernel, or the first one (the task's primary) when `name` is ""."""
    ks = kernels(mod)
    if not ks:
        raise TransformError("the task has no @triton.jit kernel")
    if not name:
        return ks[0]
    for k in ks:
        if k.name.value == name:
            return k
    raise TransformError(f"no @triton.jit kernel {name!r}; the task has {[k.name.value for k in ks]}")


def param_names(fn: cst.FunctionDef) -> list[str]:
    p = fn.params
    return [x.name.value for x in [*p.posonly_params, *p.params, *p.kwonly_params]]


def constexpr_params(fn: cst.FunctionDef) -> list[str]:
    p = fn.params
    return [
        x.name.value
        for x in [*p.params, *p.kwonly_params]
        if x.annotation is not None and "constexpr" in code(x.annotation.annotation)
    ]


def call_name(call: cst.Call) -> str:
    """`kern[grid](...)` -> "kern"; `f(...)` -> "f"; anything else -> ""."""
    f = call.func
    if isinstance(f, cst.Subscript) and isinstance(f.value, cst.Name):
        return f.value.value
    if isinstance(f, cst.Name):
        return f.value
    return ""


def is_tl(call: cst.Call, attr: str) -> bool:
    f = call.func
    return isinstance(f, cst.Attribute) and f.attr.value == attr and code(f.value) in ("tl", "triton.language")


class _Collect(cst.CSTVisitor):
    def __init__(self, want: type[cst.CSTNode]) -> None:
        self.want = want
        self.found: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, self.want):
            self.found.append(node)
        return True


def collect(node: cst.CSTNode, want: type[cst.CSTNode]) -> list:
    v = _Collect(want)
    node.visit(v)
    return v.found


def launch_calls(mod: cst.Module, kernel_name: str) -> list[cst.Call]:
    """Every `kernel_name[grid](...)` call outside the kernels (launch() and its helpers)."""
    out: list[cst.Call] = []
    for n in mod.body:
        if isinstance(n, cst.FunctionDef) and not is_jit(n):
            out += [
                c for c in collect(n, cst.Call)
                if isinstance(c.func, cst.Subscript) and call_name(c) == kernel_name
            ]
    return out


def fresh(mod: cst.Module, base: str) -> str:
    """`base`, or base_2, base_3 ... : a name the module does not use yet."""
    names = {n.value for n in collect(mod, cst.Name)}
    if base not in names:
        return base
    i = 2
    while f"{base}_{i}" in names:
        i += 1
    return f"{base}_{i}"


def literal(value: Scalar) -> cst.BaseExpression:
    return cst.parse_expression(repr(value))


def _between(items: list, last_comma: object) -> cst.Comma:
    """The comma the former last item takes: the one between the previous two items (it carries the
    newline + indent of a multi-line list), else ", "."""
    if len(items) >= 2 and isinstance(items[-2].comma, cst.Comma):
        return items[-2].comma
    if isinstance(last_comma, cst.Comma) and "\n" not in code_ws(last_comma):
        return last_comma
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def code_ws(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _append_param(params: cst.Parameters, name: str, annotation: str | None, default: Scalar | None,
                  ) -> cst.Parameters:
    ann = cst.Annotation(cst.parse_expression(annotation)) if annotation else None
    dflt = literal(default) if default is not None else None
    if params.star_kwarg is not None and not params.params and not params.kwonly_params:
        raise TransformError("the function takes only **kwargs; give it named parameters first")
    has_star = isinstance(params.star_arg, cst.Param | cst.ParamStar)
    seq_name = "kwonly_params" if params.kwonly_params or has_star else "params"
    seq = list(getattr(params, seq_name))
    if seq_name == "params" and seq and seq[-1].default is not None and dflt is None:
        raise TransformError(f"cannot add {name} without a default after parameters with defaults")
    if seq:
        last = seq[-1]
        comma = last.comma
        new = last.with_changes(
            name=cst.Name(name), annotation=ann, default=dflt,
            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                  whitespace_after=cst.SimpleWhitespace(""))
            if dflt is not None else cst.MaybeSentinel.DEFAULT,
            star="",
        )
        seq[-1] = last.with_changes(comma=_between(seq, comma))
        seq.append(new)
    else:
        seq.append(cst.Param(name=cst.Name(name), annotation=ann, default=dflt))
    return params.with_changes(**{seq_name: seq})


def _append_arg(call: cst.Call, name: str, value: cst.BaseExpression | None = None) -> cst.Call:
    """`name=name` (or `name=value`) appended to the call's arguments, in the call's layout."""
    args = list(call.args)
    if any(a.keyword is not None and a.keyword.value == name for a in args):
        raise TransformError(f"the launch call already passes {name}=")
    new = cst.Arg(value=value if value is not None else cst.Name(name), keyword=cst.Name(name),
                  equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                        whitespace_after=cst.SimpleWhitespace("")))
    if args:
        last = args[-1]
        new = new.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
        # a multi-line call: the new argument takes the last one's comma (with its newline + indent)
        # and hands its trailing whitespace (the newline before `)`) to the new last argument
        args[-1] = last.with_changes(comma=_between(args, last.comma), whitespace_after_arg=cst.SimpleWhitespace(""))
    args.append(new)
    return call.with_changes(args=args)


def _dict_append(d: cst.Dict, key: str, value: cst.BaseExpression) -> cst.Dict:
    els = list(d.elements)
    if any(isinstance(e, cst.DictElement) and code(e.key).strip("\"'") == key for e in els):
        raise TransformError(f"{key} is already a key of the dict")
    quote = '"'
    if els and isinstance(els[0], cst.DictElement) and code(els[0].key).startswith("'"):
        quote = "'"
    new = cst.DictElement(key=cst.SimpleString(f"{quote}{key}{quote}"), value=value)
    if els:
        last = els[-1]
        new = new.with_changes(comma=last.comma, whitespace_before_colon=last.whitespace_before_colon,
                               whitespace_after_colon=last.whitespace_after_colon)
        els[-1] = last.with_changes(comma=_between(els, last.comma))
    els.append(new)
    return d.with_changes(elements=els)


def top_assign(mod: cst.Module, name: str) -> tuple[cst.SimpleStatementLine, cst.Assign] | None:
    """The module-level `name = ...` that counts: the last one, as Python (and the patcher, which appends
    a literal CONFIG after a computed one) reads the file."""
    found = None
    for stmt in mod.body:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0],
                                                                                             cst.Assign):
            a = stmt.body[0]
            if any(isinstance(t.target, cst.Name) and t.target.value == name for t in a.targets):
                found = stmt, a
    return found


def add_constexpr(mod: cst.Module, kernel_name: str, name: str, value: Scalar, domain: list[Scalar],
                  ) -> cst.Module:
    """Thread a new constexpr `name` from CONFIG through launch() into the kernel: kernel parameter
    `name: tl.constexpr`, launch() parameter `name=value`, `name=name` on every launch call, CONFIG[name] =
    value and SPACE[name] = domain (a SPACE is created when the task has none)."""
    k = kernel(mod, kernel_name)
    if name in param_names(k):
        raise TransformError(f"kernel {k.name.value} already has a parameter {name}")
    calls = launch_calls(mod, k.name.value)
    if not calls:
        raise TransformError(f"no `{k.name.value}[grid](...)` launch call found outside the kernels")
    owners = {}
    for n in mod.body:
        if isinstance(n, cst.FunctionDef) and not is_jit(n) and any(c in collect(n, cst.Call) for c in calls):
            owners[n.name.value] = n
    cfg = top_assign(mod, "CONFIG")
    if cfg is None or not isinstance(cfg[1].value, cst.Dict):
        raise TransformError("the task has no literal `CONFIG = {...}` dict to add the parameter to")
    new_k = k.with_changes(params=_append_param(k.params, name, "tl.constexpr", None))
    mod = mod.deep_replace(k, new_k)  # type: ignore[assignment]
    for fname in owners:
        fn = function(mod, fname)
        assert fn is not None
        new_fn = fn
        if name not in param_names(fn) and fn.params.star_kwarg is None:
            new_fn = new_fn.with_changes(params=_append_param(fn.params, name, None, value))
        for c in collect(new_fn, cst.Call):
            if isinstance(c.func, cst.Subscript) and call_name(c) == k.name.value:
                new_fn = new_fn.deep_replace(c, _append_arg(c, name))  # type: ignore[assignment]
        mod = mod.deep_replace(fn, new_fn)  # type: ignore[assignment]
    stmt, a = top_assign(mod, "CONFIG")  # type: ignore[misc]
    mod = mod.deep_replace(a.value, _dict_append(a.value, name, literal(value)))  # type: ignore[arg-type]
    sp = top_assign(mod, "SPACE")
    dom = cst.parse_expression(repr(list(domain)))
    if sp is not None and isinstance(sp[1].value, cst.Dict):
        mod = mod.deep_replace(sp[1].value, _dict_append(sp[1].value, name, dom))  # type: ignore[assignment]
    elif sp is not None and isinstance(sp[1].value, (cst.List, cst.Tuple)):  # a list of configs
        try:
            entries = ast.literal_eval(code(sp[1].value))
        except (ValueError, SyntaxError) as e:
            raise TransformError(f"SPACE is a list but not a literal one ({e}); write its configs as literals") \
                from e
        grown = cst.parse_expression(repr(space_list.with_knob(entries, name, list(domain))))
        mod = mod.deep_replace(sp[1].value, grown)  # type: ignore[assignment]
    else:
        stmt, _ = top_assign(mod, "CONFIG")  # type: ignore[misc]
        i = list(mod.body).index(stmt)
        line = cst.parse_statement(f"SPACE = {{{name!r}: {list(domain)!r}}}\n".replace("'", '"'))
        mod = mod.with_changes(body=[*mod.body[: i + 1], line, *mod.body[i + 1:]])
    return mod


def constexpr_name(mod: cst.Module, kernel_name: str, base: str) -> str:
    """`base` unless the kernel or CONFIG already uses it."""
    k = kernel(mod, kernel_name)
    taken = set(param_names(k)) | {n.value for n in collect(k, cst.Name)}
    cfg = top_assign(mod, "CONFIG")
    if cfg is not None and isinstance(cfg[1].value, cst.Dict):
        taken |= {code(e.key).strip("\"'") for e in cfg[1].value.elements if isinstance(e, cst.DictElement)}
    if base not in taken:
        return base
    i = 2
    while f"{base}_{i}" in taken:
        i += 1
    return f"{base}_{i}"


def replace_stmts(block: cst.IndentedBlock, old: cst.BaseStatement, new: list[cst.BaseStatement],
                  ) -> cst.IndentedBlock:
    body = list(block.body)
    i = body.index(old)
    return block.with_changes(body=[*body[:i], *new, *body[i + 1:]])


def stmts(text: str) -> list[cst.BaseStatement]:
    """Statements parsed from `text` (dedented source, one per line or compound); comment lines before
    the first statement stay with it (LibCST would put them in the module header)."""
    mod = cst.parse_module(text)
    body = list(mod.body)
    head = [line for line in mod.header if line.comment is not None]
    if body and head:
        body[0] = body[0].with_changes(leading_lines=[*head, *body[0].leading_lines])
    return body


# The second pass of a split reduction, as a Triton kernel of the candidate's own: torch reductions in
# launch() are what the honesty probe flags as "launch ran the reference's torch ops" when the reference
# reduces with the same op (H200 run r40: split_k on the column sum, whose reference is x.sum(0)).
_SLAB_SUM = '''

@triton.jit
def {name}(partials_ptr, out_ptr, n, SLABS: tl.constexpr, BLOCK: tl.constexpr):
    """Second pass of a split reduction (kpilot): out[i] = slab 0 + slab 1 + ... + slab SLABS-1, in
    that order (fp32), so every run gives the same bits."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for s in tl.static_range(SLABS):
        acc += tl.load(partials_ptr + s * n + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)
'''
_TOTAL = '''

@triton.jit
def {name}(partials_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Second pass of a two-stage reduction (kpilot): out[0] += the n partials, summed in one fixed order
    (BLOCK-wide strips in sequence, then one tree of fixed shape), so every run gives the same bits."""
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(partials_ptr + offs, mask=offs < n, other=0.0)
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr, (tl.load(out_ptr).to(tl.float32) + total).to(out_ptr.dtype.element_ty))
'''
SECOND_PASS_BLOCK = 1024


def add_kernel_after(mod: cst.Module, after: str, source: str) -> cst.Module:
    """`source` (one or more top-level definitions) inserted right after the kernel `after`, so the
    task's own kernel stays the first one in the file."""
    body = list(mod.body)
    at = next(i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and s.name.value == after)
    new = list(cst.parse_module(source).body)
    new[0] = new[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])  # PEP 8's two blank lines
    return mod.with_changes(body=[*body[: at + 1], *new, *body[at + 1:]])


def slab_sum_kernel(mod: cst.Module, after: str) -> tuple[cst.Module, str]:
    """The module with a fixed-order slab-sum kernel added after kernel `after`, and its name."""
    name = fresh(mod, "sum_slabs")
    return add_kernel_after(mod, after, _SLAB_SUM.format(name=name)), name


def total_kernel(mod: cst.Module, after: str) -> tuple[cst.Module, str]:
    """The module with a fixed-order total-of-partials kernel added after kernel `after`, and its name."""
    name = fresh(mod, "add_total")
    return add_kernel_after(mod, after, _TOTAL.format(name=name)), name
