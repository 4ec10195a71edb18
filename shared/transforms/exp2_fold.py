"""exp -> exp2 with log2(e) folded: `tl.exp(a * s)` becomes `tl.exp2(a * s_log2e)` with
`s_log2e = s * log2(e)` computed once at the top of the kernel (s a kernel parameter: the softmax scale);
any other `tl.exp(e)` becomes `tl.exp2((e) * LOG2E)`. ex2.approx is what the GPU has; tl.exp pays a
multiply by log2(e) per element on top of it, which the fold moves out of the loop.

Precondition: the kernel calls tl.exp (or tl.math.exp).
"""

from __future__ import annotations

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Transform, TransformError, TransformSpec

LOG2E = "1.4426950408889634"  # log2(e) to double precision; fp32 rounds it to 0x3FB8AA3B as Triton does

SPEC = TransformSpec(
    name="exp2_fold",
    summary="tl.exp -> tl.exp2 with log2(e) folded into a kernel-parameter scale (softmax, attention)",
    answers=["exp_instead_of_exp2", "slow_precise_math", "roofline_far_below", "compute_throughput_bound"],
    precondition="the kernel calls tl.exp",
)


def _is_exp(call: cst.Call) -> bool:
    f = C.code(call.func)
    return f in ("tl.exp", "tl.math.exp", "triton.language.exp") and len(call.args) == 1


class _Exp2(cst.CSTTransformer):
    def __init__(self, scales: set[str]) -> None:
        self.scales, self.folded, self.done = scales, set[str](), 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if not _is_exp(original):
            return updated
        self.done += 1
        e = updated.args[0].value
        if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Multiply):
            for side in ("right", "left"):
                s = getattr(e, side)
                if isinstance(s, cst.Name) and s.value in self.scales:
                    self.folded.add(s.value)
                    e = e.with_changes(**{side: cst.Name(f"{s.value}_log2e")})
                    return cst.parse_expression("tl.exp2(x)").with_changes(args=[cst.Arg(e)])
        inner = C.code(e)
        return cst.parse_expression(f"tl.exp2(({inner}) * {LOG2E})")


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    k = C.kernel(mod, kernel_name)
    # a scale can be folded when it is a runtime kernel parameter that the body never reassigns
    assigned = {t.target.value for a in C.collect(k.body, cst.Assign) for t in a.targets
                if isinstance(t.target, cst.Name)}
    scales = {p for p in C.param_names(k) if p not in C.constexpr_params(k) and p not in assigned}
    t = _Exp2(scales)
    new_k = k.visit(t)
    if not t.done:
        raise TransformError(f"{k.name.value} calls no tl.exp")
    if t.folded:
        body = new_k.body
        assert isinstance(body, cst.IndentedBlock)
        pre = C.stmts("".join(f"{s}_log2e = {s} * {LOG2E}  # exp(x) = exp2(x * log2(e))\n"
                              for s in sorted(t.folded)))
        new_k = new_k.with_changes(body=body.with_changes(body=[*pre, *body.body]))
    return mod.deep_replace(k, new_k).code  # type: ignore[union-attr]


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
