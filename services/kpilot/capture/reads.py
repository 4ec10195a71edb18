"""Which pointer parameters a captured kernel reads, from its source. Pure.

The captured task's `bytes_moved` is the verifier's roofline: its least time at the measured bandwidth.
The capture knows which tensors a launch wrote (their values changed) but not which it read, and counting
every tensor as read overstates the bytes of an output the kernel only stores to (H200 run r52: liger's
swiglu counted its output `c` as read, 4 tensors' bytes for 3, so the bound 0.083 ms sat above the
original's own 0.068 ms, the verifier refused an honest candidate as an "impossible speedup", and r47's
rms_norm and layer_norm jobs stopped at "98 %" and "104 %" of a bound 1.5x too high).

The rule, flow-insensitive over each function's AST:
- a name derives from pointer parameter P when an assignment (=, +=, :=, a for target) has a right side
  that mentions P or a name derived from it: pointer arithmetic, `tl.make_block_ptr`, `tl.advance`,
  `tl.make_tensor_descriptor`. A value loaded through P is data, not a pointer: the inside of a load call
  derives nothing, and `P.dtype` / `P.dtype.element_ty` is a type, not an address;
- P is read when a derived name is in the pointer of a `load` or `atomic_*` call (`tl.load(p + offs)`,
  `tl.atomic_add(p, 1)`), is the object of a `.load(...)` method (a tensor descriptor, a block pointer
  library), or is passed to a jit helper of the captured source that reads the matching parameter;
- a derived name passed to a plain function this module cannot follow (not a helper, not a builtin) counts
  as read: more bytes, a lower roofline fraction, never a false "impossible speedup" the other way round.
`store` calls read nothing; every other method or `tl.*` call only computes.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

_TYPE_ATTRS = {"dtype", "element_ty", "type"}
_PURE_BUILTINS = {"range", "min", "max", "len", "int", "float", "bool", "abs", "isinstance", "print"}


def _is_read_call(func: ast.expr) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name == "load" or name.startswith("atomic_")


def _mentions(node: ast.AST, names: set[str]) -> bool:
    """`node` uses one of `names` as a value (not inside a load, not only for its dtype)."""
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute) and node.attr in _TYPE_ATTRS:
        return False
    if isinstance(node, ast.Call) and _is_read_call(node.func):
        return False  # a load's result is data (its own pointer is judged by _call_reads)
    return any(_mentions(c, names) for c in ast.iter_child_nodes(node))


def _targets(node: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]


def _derived(fn: ast.FunctionDef, param: str) -> set[str]:
    names = {param}
    flows: list[tuple[list[str], ast.AST]] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            flows.append(([t for tgt in node.targets for t in _targets(tgt)], node.value))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            flows.append((_targets(node.target), node.value))
        elif isinstance(node, (ast.For, ast.comprehension)):
            flows.append((_targets(node.target), node.iter))
    changed = True
    while changed:
        changed = False
        for targets, value in flows:
            if not set(targets) <= names and _mentions(value, names):
                names |= set(targets)
                changed = True
    return names


def _pointer_args(call: ast.Call) -> list[ast.expr]:
    out = list(call.args[:1])
    out += [k.value for k in call.keywords if k.arg in ("pointer", "ptr", "base")]
    return out


class _Reader:
    def __init__(self, functions: dict[str, ast.FunctionDef]) -> None:
        self.functions = functions
        self.memo: dict[tuple[str, str], bool] = {}

    def reads(self, fn_name: str, param: str) -> bool:
        key = (fn_name, param)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = False  # a cycle reads nothing more than what its other paths show
        fn = self.functions[fn_name]
        names = _derived(fn, param)
        got = any(self._call_reads(c, names) for c in ast.walk(fn) if isinstance(c, ast.Call))
        self.memo[key] = got
        return got

    def _call_reads(self, call: ast.Call, names: set[str]) -> bool:
        func = call.func
        if _is_read_call(func):
            if isinstance(func, ast.Attribute) and _mentions(func.value, names):
                return True  # desc.load([...]): the object is the pointer
            return any(_mentions(a, names) for a in _pointer_args(call))
        fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if fname in self.functions:
            helper = self.functions[fname]
            params = [a.arg for a in helper.args.posonlyargs + helper.args.args]
            bound = list(zip(params, call.args, strict=False))
            bound += [(k.arg, k.value) for k in call.keywords if k.arg in params]
            return any(_mentions(v, names) and self.reads(fname, p) for p, v in bound)
        if isinstance(func, ast.Attribute) or fname in _PURE_BUILTINS or fname == "store":
            return False  # tl.*, tensor methods, stores: they compute or write
        return any(_mentions(a, names) for a in [*call.args, *(k.value for k in call.keywords)])


def read_params(functions: Sequence[Sequence[str]], params: Sequence[str]) -> set[str] | None:
    """Of `params` (the kernel's pointer parameters), those the kernel reads; `functions` are the captured
    [name, source] pairs, the kernel first. None when the source does not parse into those functions."""
    defs: dict[str, ast.FunctionDef] = {}
    for name, text in functions:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return None
        fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
        if fn is None:
            return None
        defs[name] = fn
    if not defs:
        return None
    kernel = functions[0][0]
    known = {a.arg for a in defs[kernel].args.posonlyargs + defs[kernel].args.args}
    reader = _Reader(defs)
    return {p for p in params if p in known and reader.reads(kernel, p)}
