"""Software pipelining of a K loop: `for k in range(...)` around a tl.dot becomes
`tl.range(..., num_stages=LOOP_STAGES)`, so Triton prefetches the loop's loads LOOP_STAGES - 1 iterations
ahead (cp.async on Hopper) whatever the launch's num_stages is. The config search tunes LOOP_STAGES.

Precondition: a `for ... in range(...)` loop in the kernel whose body calls tl.dot (or, when the kernel
has no dot, tl.load), not already a tl.range/static_range.
"""

from __future__ import annotations

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Param, Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="k_pipeline",
    summary="pipeline the K loop: range -> tl.range(num_stages=LOOP_STAGES) (cp.async prefetch)",
    answers=["k_loop_not_pipelined", "wgmma_serialized_wait", "latency_bound", "stall_dominant"],
    params=[Param(name="stages", domain=[2, 3, 4, 5], default=3, constexpr="LOOP_STAGES",
                  doc="loads in flight; each stage holds one A and one B tile in shared memory")],
    precondition="a `for` over range(...) whose body holds tl.dot (or tl.load when there is no dot)",
)


def _calls(node: cst.CSTNode, attr: str) -> bool:
    return any(C.is_tl(c, attr) for c in C.collect(node, cst.Call))


class _Pipeline(cst.CSTTransformer):
    def __init__(self, want: str, stages: str) -> None:
        self.want, self.stages, self.done = want, stages, 0

    def leave_For(self, original: cst.For, updated: cst.For) -> cst.For:
        it = original.iter
        if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range"):
            return updated
        if not _calls(original.body, self.want):
            return updated
        self.done += 1
        args = [*it.args]
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        args.append(cst.Arg(keyword=cst.Name("num_stages"), value=cst.Name(self.stages),
                            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                  whitespace_after=cst.SimpleWhitespace(""))))
        return updated.with_changes(iter=it.with_changes(func=cst.parse_expression("tl.range"), args=args))


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    k = C.kernel(mod, kernel_name)
    want = "dot" if _calls(k, "dot") else "load"
    if any(C.is_tl(c, "range") and any(a.keyword and a.keyword.value == "num_stages" for a in c.args)
           for c in C.collect(k, cst.Call)):
        raise TransformError(f"{k.name.value} already pipelines a loop with tl.range(num_stages=...)")
    name = C.constexpr_name(mod, k.name.value, "LOOP_STAGES")
    t = _Pipeline(want, name)
    new_k = k.visit(t)
    if not t.done:
        raise TransformError(f"{k.name.value} has no `for ... in range(...)` loop around a tl.{want}")
    mod = mod.deep_replace(k, new_k)  # type: ignore[assignment]
    return C.add_constexpr(mod, k.name.value, name, params["stages"], SPEC.params[0].domain).code


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
