"""Several rows per program for row kernels: a kernel whose program handles row `r = tl.program_id(0)`
handles rows r*ROWS .. r*ROWS+ROWS-1 (a tl.static_range loop with a bound check), and the launch grid's
axis 0 shrinks to cdiv(rows, ROWS). Fewer, longer programs amortise launch and per-program set-up when
rows are short. The config search tunes ROWS (1 = the original).

Precondition: the kernel body assigns `r = tl.program_id(0)` at its top level, calls tl.program_id(0) /
tl.num_programs(0) nowhere else, has no `return`, and every launch grid is a tuple literal (or a name
bound to one in the launching function).
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Param, Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="rows_per_program",
    summary="ROWS rows per program in a row kernel; grid axis 0 = cdiv(rows, ROWS)",
    answers=["launch_bound_tiny_kernel", "tail_effect", "idle_threads_tile_smaller_than_block",
             "occupancy_limited_by_block_size", "latency_bound"],
    params=[Param(name="rows", domain=[1, 2, 4, 8], default=4, constexpr="ROWS",
                  doc="rows a program handles, one after the other")],
    precondition="`row = tl.program_id(0)` at the kernel's top level, no other axis-0 id, no return",
)


def _axis0(call: cst.Call) -> bool:
    return bool(call.args) and C.code(call.args[0].value) == "0" or not call.args


def _grid_sites(fn: cst.FunctionDef, kernel_name: str) -> list[cst.Tuple]:
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
                raise TransformError(f"launch grid {C.code(g)!r} is not a tuple literal (write it as (rows,))")
            out.append(g)
    return out


class _Fill(cst.CSTTransformer):
    """Replaces the `pass` placeholder statement of a loop template with the kernel's statements."""

    def __init__(self, body: list[cst.BaseStatement]) -> None:
        self.body = body

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine,
                                  ) -> cst.BaseStatement | cst.FlattenSentinel:
        if len(original.body) == 1 and isinstance(original.body[0], cst.Pass):
            return cst.FlattenSentinel(self.body)
        return updated


def program_loop(source: str, kernel_name: str, what: str, knob_base: str, value: Scalar, domain: list[Scalar],
                 loop: Callable[[str, str, str, str], str], grid: Callable[[str, str], str]) -> str:
    """Wrap the kernel body after `r = tl.program_id(0)` in the loop `loop(sub, r, knob, count)` (its `pass`
    line = the body), pass the original grid axis 0 as `count`, set grid axis 0 to `grid(axis0, knob)`
    and add the knob as a tunable constexpr."""
    mod = C.parse(source)
    k = C.kernel(mod, kernel_name)
    kn = k.name.value
    body = k.body
    assert isinstance(body, cst.IndentedBlock)
    if C.collect(k, cst.Return):
        raise TransformError(f"{kn} returns early; {what} wraps the body in a loop and cannot")
    ids = [c for c in C.collect(k, cst.Call) if (C.is_tl(c, "program_id") or C.is_tl(c, "num_programs"))
           and _axis0(c)]
    site = None
    for i, s in enumerate(body.body):
        if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign):
            a = s.body[0]
            if (len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name) and isinstance(a.value, cst.Call)
                    and C.is_tl(a.value, "program_id") and _axis0(a.value)):
                site = (i, a.targets[0].target.value)
                break
    if site is None:
        raise TransformError(f"{kn} has no top-level `row = tl.program_id(0)`")
    if len(ids) != 1:
        raise TransformError(f"{kn} uses the axis-0 program id / count {len(ids)} times; {what} needs "
                             "exactly the one `row = tl.program_id(0)`")
    knob = C.constexpr_name(mod, kn, knob_base)
    count = C.fresh(mod, "n_programs_total" if what != "rows_per_program" else "n_rows_total")
    sub = C.fresh(mod, "program_item" if what != "rows_per_program" else "row_in_program")
    i, r = site
    template = cst.parse_statement(loop(sub, r, knob, count))
    filled = template.visit(_Fill(list(body.body[i + 1:])))
    filled = filled.with_changes(leading_lines=body.body[i].leading_lines)  # type: ignore[union-attr]
    k2 = k.with_changes(body=body.with_changes(body=[*body.body[:i], filled]))
    k2 = k2.with_changes(params=C._append_param(k2.params, count, None, None))
    mod = mod.deep_replace(k, k2)  # type: ignore[assignment]
    # launch side: grid axis 0 -> grid(axis 0, knob), the original axis 0 passed as a keyword
    for fn in list(mod.body):
        if not isinstance(fn, cst.FunctionDef) or C.is_jit(fn):
            continue
        sites = _grid_sites(fn, kn)
        if not sites:
            continue
        new_fn = fn
        for g in sites:
            first = g.elements[0]
            g0 = C.code(first.value)
            new_g = g.with_changes(elements=[first.with_changes(value=cst.parse_expression(grid(g0, knob))),
                                             *g.elements[1:]])
            new_fn = new_fn.deep_replace(g, new_g)  # type: ignore[assignment]
            for c in C.collect(new_fn, cst.Call):
                if isinstance(c.func, cst.Subscript) and C.call_name(c) == kn:
                    arg = C._append_arg(c, count)
                    arg = arg.with_changes(args=[*arg.args[:-1], arg.args[-1].with_changes(
                        value=cst.parse_expression(g0))])
                    new_fn = new_fn.deep_replace(c, arg)  # type: ignore[assignment]
        mod = mod.deep_replace(fn, new_fn)  # type: ignore[assignment]
    if "import triton\n" not in mod.code:
        raise TransformError("the task does not `import triton` (needed for triton.cdiv in the grid)")
    return C.add_constexpr(mod, kn, knob, value, domain).code


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    return program_loop(
        source, kernel_name, "rows_per_program", "ROWS", params["rows"], SPEC.params[0].domain,
        lambda sub, r, knob, count: (f"for {sub} in tl.static_range({knob}):\n"
                                     f"    {r} = tl.program_id(0) * {knob} + {sub}\n"
                                     f"    if {r} < {count}:\n"
                                     f"        pass\n"),
        lambda g0, knob: f"triton.cdiv({g0}, {knob})")


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
