"""Zero-padded aligned copies for odd leading dimensions: launch() hands the kernel, instead of each 2-D
input whose row pitch is not a multiple of ALIGN elements, a view of the same shape into a zero-padded
buffer whose pitch is (one copy per call). The kernel's arithmetic and masks are unchanged; what changes
is that Triton specialises the row stride as divisible by 16, so loads along a row can be 16-byte
vectors (with even_k's unmasked interior) instead of 2-byte scalars. The copy is part of every call
and so of every timing.

With extents=1 the sizes are padded too: every extent the kernel is passed that is the row length of one
of its 2-D tensors (K of A, N of B and C in a GEMM) reaches the kernel rounded up to ALIGN, each tensor
with such a dimension is a view into a zero buffer of the rounded-up dims (an output's buffer is not
filled: the kernel writes it, the caller gets the view), so masks across the contiguous dimensions have
divisible bounds and Triton vectorises them as well. Valid where zeros are neutral and extra outputs are
dropped: the kernel's loaded values feed only tl.dot (zero columns of A meet zero rows of B) and it has
no other reduction; the padded output rows/columns lie outside the view that is returned.

Precondition: a kernel launch in a function that unpacks its tensors from `inputs` and passes one of
them by name together with `name.stride(0)` (the kernel takes the row stride as an argument). With
extents=1 also: every tensor the kernel gets has its dims bound by name in that function (`M, K =
a.shape`, `N = b.shape[1]`, `c = torch.empty((M, N), ...)`), and every tl.load of the kernel feeds
tl.dot only.
"""

from __future__ import annotations

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Param, Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="aligned_copies",
    summary="hand the kernel 2-D inputs with a row pitch (extents=1: and sizes) padded to ALIGN elements (zero-padded copies)",
    answers=["scalar_global_access", "mask_blocks_vectorization", "uncoalesced_strided_access"],
    params=[Param(name="extents", domain=[0, 1], default=0,
                  doc="1: also round the row-length extents the kernel gets up to ALIGN (zeros past the "
                      "data; loads that feed only tl.dot)"),
            Param(name="align", domain=[8, 64], default=64,
                  doc="row pitch multiple in elements: 8 = 16 B of bf16; 64 = a 128 B line")],
    precondition="launch passes an input tensor `t` (unpacked from inputs) with t.stride(0); extents=1: "
                 "tensor dims bound by name in launch, kernel loads feed tl.dot only",
)

HELPER = '''

def aligned_rows(t, multiple):
    """`t` itself when its row pitch is a multiple of `multiple` elements, else a view of the same shape
    into a zero-padded buffer whose pitch is (kpilot transform aligned_copies)."""
    if t.dim() != 2 or t.stride(1) != 1 or t.stride(0) % multiple == 0:
        return t
    cols = -(-t.shape[1] // multiple) * multiple
    view = torch.zeros(t.shape[0], cols, device=t.device, dtype=t.dtype)[:, : t.shape[1]]
    view.copy_(t)
    return view
'''

EXTENTS_HELPER = '''

def aligned_extents(t, multiple, copy=True):
    """`t` itself when its dims and row pitch are multiples of `multiple` elements, else a view of the same
    shape into a zero buffer whose dims are rounded up to them: the kernel may read the zeros past the
    data (copy=False: an output, the buffer is left zero) (kpilot transform aligned_copies extents=1)."""
    if t.dim() != 2:
        raise ValueError(f"aligned_extents pads 2-D tensors, got {t.dim()}-D")
    up = -(-t.shape[1] // multiple) * multiple
    n = -(-t.shape[0] // multiple) * multiple
    if t.stride(1) == 1 and t.stride(0) % multiple == 0 and up == t.shape[1] and n == t.shape[0]:
        return t
    view = torch.zeros(n, up, device=t.device, dtype=t.dtype)[: t.shape[0], : t.shape[1]]
    if copy:
        view.copy_(t)
    return view
'''
_REDUCTIONS = {"sum", "max", "min", "reduce", "cumsum", "cumprod", "argmax", "argmin", "xor_sum", "atomic_add",
               "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg", "histogram", "sort"}


def _unpacked(fn: cst.FunctionDef) -> set[str]:
    out: set[str] = set()
    for a in C.collect(fn, cst.Assign):
        if C.code(a.value) == "inputs":
            for t in a.targets:
                out |= {n.value for n in C.collect(t.target, cst.Name)}
    return out


def _dims(fn: cst.FunctionDef) -> dict[str, list[str | None]]:
    """Tensor -> its dims by name, from `M, K = a.shape`, `N = b.shape[1]` and
    `c = torch.empty((M, N), ...)` / torch.zeros(...) in the launching function."""
    out: dict[str, list[str | None]] = {}
    for a in C.collect(fn, cst.Assign):
        if len(a.targets) != 1:
            continue
        tgt, v = a.targets[0].target, a.value
        if isinstance(v, cst.Attribute) and v.attr.value == "shape" and isinstance(v.value, cst.Name) and \
                isinstance(tgt, cst.Tuple):
            out[v.value.value] = [e.value.value if isinstance(e.value, cst.Name) else None for e in tgt.elements]
        elif isinstance(v, cst.Subscript) and isinstance(v.value, cst.Attribute) and v.value.attr.value == "shape" \
                and isinstance(v.value.value, cst.Name) and isinstance(tgt, cst.Name):
            idx = C.code(v.slice[0].slice)
            if idx.lstrip("-").isdigit():
                dims = out.setdefault(v.value.value.value, [None, None])
                i = int(idx)
                if -len(dims) <= i < len(dims):
                    dims[i] = tgt.value
        elif isinstance(v, cst.Call) and C.code(v.func) in ("torch.empty", "torch.zeros") and v.args and \
                isinstance(v.args[0].value, cst.Tuple) and isinstance(tgt, cst.Name):
            out[tgt.value] = [e.value.value if isinstance(e.value, cst.Name) else None for e in v.args[0].value.elements]
    return out


def _loads_feed_dot_only(k: cst.FunctionDef) -> str | None:
    """None when every tl.load of the kernel is a tl.dot operand (directly or through one name), else why."""
    banned = sorted({c.func.attr.value for c in C.collect(k, cst.Call) if isinstance(c.func, cst.Attribute)
                     and c.func.attr.value in _REDUCTIONS})
    if banned:
        return f"{k.name.value} calls {banned}: zero padding is neutral for tl.dot only"
    dots = [c for c in C.collect(k, cst.Call) if C.is_tl(c, "dot")]
    in_dot = {id(n) for d in dots for a in d.args[:2] for n in C.collect(a.value, cst.CSTNode)}
    named: dict[str, cst.Assign] = {}
    for a in C.collect(k, cst.Assign):
        if isinstance(a.value, cst.Call) and C.is_tl(a.value, "load") and len(a.targets) == 1 and \
                isinstance(a.targets[0].target, cst.Name):
            named[a.targets[0].target.value] = a
    for ld in [c for c in C.collect(k, cst.Call) if C.is_tl(c, "load")]:
        if id(ld) in in_dot or any(a.value is ld for a in named.values()):
            continue
        return f"`{C.code(ld)[:60]}` does not feed tl.dot: its zero padding would reach the result"
    targets = {id(a.targets[0].target) for a in named.values()}
    for n in C.collect(k, cst.Name):
        if n.value in named and id(n) not in targets and id(n) not in in_dot:
            return f"{n.value} (a tl.load) is used outside tl.dot: its zero padding would reach the result"
    return None


def _extents(fn: cst.FunctionDef, k: cst.FunctionDef, calls: list[cst.Call], inputs: set[str], align: Scalar,
             mod: cst.Module) -> tuple[list[cst.BaseStatement], list[cst.BaseStatement], dict[str, str]]:
    """extents=1: the rounded-up sizes (before the grid), the padded views (before the launch) and the
    renames of the extents in the launch call and its grid."""
    why = _loads_feed_dot_only(k)
    if why is not None:
        raise TransformError(why)
    dims = _dims(fn)
    extents = {d for ds in dims.values() for d in ds if d is not None}
    positional = [a.value.value for c in calls for a in c.args if a.keyword is None and isinstance(a.value, cst.Name)]
    texts = {C.code(a.value) for c in calls for a in c.args}
    tensors = sorted({t for t in positional if f"{t}.stride(0)" in texts})
    unclear = sorted({t for t in positional if t not in tensors and t not in extents})
    if unclear:
        raise TransformError(f"{k.name.value} is passed {unclear} without a row stride and not as a `.shape` "
                             "extent: cannot tell whether they are tensors whose dims would be padded")
    padded = sorted({dims[t][1] for t in tensors if len(dims.get(t, [])) == 2 and dims[t][1] in positional})  # type: ignore[misc]
    if not padded:
        raise TransformError(f"{k.name.value} is passed no row length of its 2-D tensors by name (bind them: "
                             "`M, K = a.shape`, `N = b.shape[1]`, `c = torch.empty((M, N), ...)`)")
    rename = {e: C.fresh(mod, f"{e}_aligned") for e in padded}
    sizes = C.stmts("".join(f"{rename[e]} = -(-{e} // {align}) * {align}\n" for e in padded))
    sizes[0] = sizes[0].with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment(
        f"# {', '.join(padded)} rounded up to {align} for the kernel and its grid (kpilot transform "
        "aligned_copies extents=1)"))])
    # every dim rounded up: whichever of them the kernel walks to a padded extent, it is there
    views = C.stmts("".join(f"{t} = aligned_extents({t}, {align}{'' if t in inputs else ', copy=False'})\n"
                            for t in tensors))
    views[0] = views[0].with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment(
        f"# {', '.join(tensors)} as views into zero buffers with every dim rounded up to {align}"))])
    return sizes, views, rename


class _Rename(cst.CSTTransformer):
    """Renames the extents where they are read (not attribute names, keywords or assignment targets)."""

    def __init__(self, rename: dict[str, str]) -> None:
        self.rename = rename

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=self.rename[updated.value]) if updated.value in self.rename else updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)


def _with_extents(fn: cst.FunctionDef, k: cst.FunctionDef, calls: list[cst.Call], inputs: set[str],
                  align: Scalar, mod: cst.Module) -> cst.FunctionDef:
    body = fn.body
    assert isinstance(body, cst.IndentedBlock)
    sizes, views, rename = _extents(fn, k, calls, inputs, align, mod)
    stmts = list(body.body)
    at_call = next(i for i, s in enumerate(stmts) if any(c in C.collect(s, cst.Call) for c in calls))
    at_grid = at_call
    for c in calls:
        g = c.func.slice[0].slice  # type: ignore[attr-defined]
        g = g.value if isinstance(g, cst.Index) else g
        if isinstance(g, cst.Name):
            sites = [i for i, s in enumerate(stmts[:at_call]) if isinstance(s, cst.SimpleStatementLine) and any(
                isinstance(a, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == g.value
                                                  for t in a.targets) for a in s.body)]
            if len(sites) != 1:
                raise TransformError(f"the grid {g.value} is not assigned once at the top of {fn.name.value}() "
                                     "before the launch: its extents cannot be renamed")
            at_grid = min(at_grid, sites[0])
    bound = [i for i, s in enumerate(stmts) if isinstance(s, cst.SimpleStatementLine) and any(
        isinstance(a, cst.Assign) and {n.value for t in a.targets for n in C.collect(t.target, cst.Name)} & set(rename)
        for a in s.body)]
    if not bound or max(bound) >= at_grid:
        raise TransformError(f"the extents {sorted(rename)} are not all bound before the grid and the launch")
    out = [*stmts[:at_grid], *sizes]
    for i in range(at_grid, len(stmts)):
        s = stmts[i]
        if i == at_call:
            out += [*views, s.visit(_Rename(rename))]  # type: ignore[list-item]
        elif i < at_call:
            out.append(s.visit(_Rename(rename)) if i == at_grid else s)  # type: ignore[arg-type]
        else:
            out.append(s)
    return fn.with_changes(body=body.with_changes(body=out))


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    k = C.kernel(mod, kernel_name)
    kn = k.name.value
    for helper in ("aligned_rows", "aligned_extents"):
        if C.function(mod, helper) is not None:
            raise TransformError(f"the task already defines {helper} (aligned_copies was applied)")
    for fn in list(mod.body):
        if not isinstance(fn, cst.FunctionDef) or C.is_jit(fn):
            continue
        calls = [c for c in C.collect(fn, cst.Call) if isinstance(c.func, cst.Subscript) and C.call_name(c) == kn]
        if not calls:
            continue
        body = fn.body
        assert isinstance(body, cst.IndentedBlock)
        inputs = _unpacked(fn)
        texts = {C.code(a.value) for c in calls for a in c.args}
        tensors = [t for t in sorted(inputs) if t in texts and f"{t}.stride(0)" in texts]
        if not tensors:
            raise TransformError(f"{fn.name.value}() passes no input tensor `t` together with `t.stride(0)` to {kn}")
        line = next(s for s in body.body if any(c in C.collect(s, cst.Call) for c in calls))
        i = list(body.body).index(line)
        if params["extents"]:
            new_fn = _with_extents(fn, k, calls, inputs, params["align"], mod)
            helper_src = EXTENTS_HELPER
        else:
            pre = C.stmts("".join(f"{t} = aligned_rows({t}, {params['align']})\n" for t in tensors))
            pre[0] = pre[0].with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment(
                f"# aligned row pitch for {', '.join(tensors)} (kpilot transform aligned_copies)"))])
            new_fn = fn.with_changes(body=body.with_changes(body=[*body.body[:i], *pre, *body.body[i:]]))
            helper_src = HELPER
        mod = mod.deep_replace(fn, new_fn)  # type: ignore[assignment]
        helper = cst.parse_module(helper_src.lstrip("\n")).body
        j = next(n for n, s in enumerate(mod.body) if isinstance(s, cst.FunctionDef) and s.name.value == fn.name.value)
        first = helper[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        fn_now = mod.body[j].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        mod = mod.with_changes(body=[*mod.body[:j], first, fn_now, *mod.body[j + 1:]])
        if "import torch\n" not in mod.code:
            raise TransformError("the task does not `import torch` (aligned_rows allocates a torch buffer)")
        return mod.code
    raise TransformError(f"no `{kn}[grid](...)` launch call found")


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
