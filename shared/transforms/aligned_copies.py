"""Zero-padded aligned copies for odd leading dimensions: launch() hands the kernel, instead of each 2-D
input whose row pitch is not a multiple of ALIGN elements, a view of the same shape into a zero-padded
buffer whose pitch is (one copy per call). The kernel's arithmetic and masks are unchanged; what changes
is that Triton specialises the row stride as divisible by 16, so loads along a row can be 16-byte
vectors (with even_k's unmasked interior) instead of 2-byte scalars. The copy is part of every call
and so of every timing.

Precondition: a kernel launch in a function that unpacks its tensors from `inputs` and passes one of
them by name together with `name.stride(0)` (the kernel takes the row stride as an argument).
"""

from __future__ import annotations

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Param, Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="aligned_copies",
    summary="hand the kernel 2-D inputs with a row pitch padded to ALIGN elements (zero-padded copies)",
    answers=["scalar_global_access", "mask_blocks_vectorization", "uncoalesced_strided_access"],
    params=[Param(name="align", domain=[8, 64], default=64,
                  doc="row pitch multiple in elements: 8 = 16 B of bf16; 64 = a 128 B line")],
    precondition="launch passes an input tensor `t` (unpacked from inputs) with t.stride(0)",
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


def _unpacked(fn: cst.FunctionDef) -> set[str]:
    out: set[str] = set()
    for a in C.collect(fn, cst.Assign):
        if C.code(a.value) == "inputs":
            for t in a.targets:
                out |= {n.value for n in C.collect(t.target, cst.Name)}
    return out


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    k = C.kernel(mod, kernel_name)
    kn = k.name.value
    if C.function(mod, "aligned_rows") is not None:
        raise TransformError("the task already defines aligned_rows (aligned_copies was applied)")
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
        pre = C.stmts("".join(f"{t} = aligned_rows({t}, {params['align']})\n" for t in tensors))
        pre[0] = pre[0].with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment(
            f"# aligned row pitch for {', '.join(tensors)} (kpilot transform aligned_copies)"))])
        nb = body.with_changes(body=[*body.body[:i], *pre, *body.body[i:]])
        mod = mod.deep_replace(fn, fn.with_changes(body=nb))  # type: ignore[assignment]
        helper = cst.parse_module(HELPER.lstrip("\n")).body
        j = next(n for n, s in enumerate(mod.body) if isinstance(s, cst.FunctionDef) and s.name.value == fn.name.value)
        first = helper[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        fn_now = mod.body[j].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        mod = mod.with_changes(body=[*mod.body[:j], first, fn_now, *mod.body[j + 1:]])
        if "import torch\n" not in mod.code:
            raise TransformError("the task does not `import torch` (aligned_rows allocates a torch buffer)")
        return mod.code
    raise TransformError(f"no `{kn}[grid](...)` launch call found")


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
