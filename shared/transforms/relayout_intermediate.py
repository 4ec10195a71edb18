"""Cross-kernel layout change of an intermediate tensor: a tensor that launch() allocates, one kernel
writes (the producer) and another reads (the consumer), both taking its strides from the tensor
(`x.stride(i)` at every launch), is allocated in another memory order, so the dim the consumer's tile
loads walk along their lanes (the last tile axis, `offs[None, :] * stride`) is the contiguous one:

    x = torch.empty((B, E, S), ...)                     # feature-major: the consumer's loads stride S
    x = torch.empty((B, S, E), ...).permute(0, 2, 1)    # same logical shape, E contiguous

The logical shape, every kernel's code and every launch argument stay as they are; the strides the
launches pass change with the allocation, so the producer writes and the consumer reads the new layout.
`follow` picks whose accesses decide: the consumer's loads (the uncoalesced reads this answers) or the
producer's stores.

Precondition: in a launch function, `x = torch.empty/zeros((d0, ..., dn), ...)` (a tuple of at least two
dims) used only as a kernel argument and as `x.stride(i)` arguments of the same launches, passed to at
least two kernels (a producer that tl.store-s through it, a consumer that tl.load-s), each launch passing
all n + 1 strides; and the chosen accesses walk a dim that is not already the innermost.
"""

from __future__ import annotations

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Param, Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="relayout_intermediate",
    summary="allocate a producer->consumer intermediate so the consumer's lane dim is contiguous (cross-kernel)",
    answers=["uncoalesced_strided_access", "transposed_access_no_staging"],
    params=[Param(name="follow", domain=["consumer", "producer"], default="consumer",
                  doc="whose accesses pick the contiguous dim: the consumer's loads or the producer's stores")],
    precondition="an intermediate allocated in launch(), written by one kernel and read by another, "
                 "every launch passing all its strides",
)

ALLOC = ("torch.empty", "torch.zeros")


class _Candidate:
    def __init__(self, name: str, stmt: cst.SimpleStatementLine, call: cst.Call, dims: list[str],
                 innermost: int) -> None:
        self.name, self.stmt, self.call, self.dims = name, stmt, call, dims  # dims: the logical shape
        self.innermost = innermost  # the logical dim that is contiguous in memory now
        self.launches: list[tuple[str, cst.Call]] = []  # (kernel, launch call)


def _shape(call: cst.Call) -> list[str] | None:
    pos = [a for a in call.args if a.keyword is None]
    if len(pos) == 1 and isinstance(pos[0].value, cst.Tuple | cst.List):
        return [C.code(e.value) for e in pos[0].value.elements]
    return None


def _allocation(value: cst.BaseExpression) -> tuple[cst.Call, list[str], int] | None:
    """`torch.empty((d0, ..., dn), ...)` -> (call, dims, n); `torch.empty(shape, ...).permute(p)` (this
    transformation's own output) -> (call, the logical dims, the logical dim stored innermost)."""
    perm: list[int] | None = None
    if (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "permute"
            and isinstance(value.func.value, cst.Call)):
        try:
            perm = [int(C.code(a.value)) for a in value.args]
        except ValueError:
            return None
        value = value.func.value
    if not (isinstance(value, cst.Call) and C.code(value.func) in ALLOC):
        return None
    dims = _shape(value)
    if dims is None or len(dims) < 2:
        return None
    if perm is None:
        return value, dims, len(dims) - 1
    if sorted(perm) != list(range(len(dims))):
        return None
    return value, [dims[p] for p in perm], perm.index(len(dims) - 1)


def _vector_names(k: cst.FunctionDef) -> set[str]:
    """Names in the kernel bound to tensors of more than one element: tl.arange and what derives from it."""
    out: set[str] = set()
    assigns = [(C.code(t.target), a.value) for a in C.collect(k, cst.Assign) for t in a.targets]
    changed = True
    while changed:
        changed = False
        for name, value in assigns:
            if name in out:
                continue
            if any(C.is_tl(c, "arange") for c in C.collect(value, cst.Call)) or any(
                    n.value in out for n in C.collect(value, cst.Name)):
                out.add(name)
                changed = True
    return out


def _terms(e: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Add):
        return _terms(e.left) + _terms(e.right)
    return [e]


def _lane_stride(term: cst.BaseExpression, vectors: set[str]) -> str | None:
    """The stride name of a term whose lanes walk it: `v[None, :] * s` (last tile axis) or `v * s` (1-D)."""
    if not (isinstance(term, cst.BinaryOperation) and isinstance(term.operator, cst.Multiply)):
        return None
    for v, s in ((term.left, term.right), (term.right, term.left)):
        if not isinstance(s, cst.Name):
            continue
        if isinstance(v, cst.Name) and v.value in vectors:
            return s.value
        if (isinstance(v, cst.Subscript) and isinstance(v.value, cst.Name) and v.value.value in vectors
                and [C.code(x.slice) for x in v.slice][-1:] == [":"]
                and all(C.code(x.slice) == "None" for x in v.slice[:-1])):
            return s.value
    return None


def _accesses(k: cst.FunctionDef, ptr: str, op: str) -> list[list[cst.BaseExpression]]:
    """The address terms of every tl.<op> through `ptr` (a pointer variable's definition expanded)."""
    defs = {C.code(t.target): a.value for a in C.collect(k, cst.Assign) for t in a.targets}
    out = []
    for c in C.collect(k, cst.Call):
        if not (C.is_tl(c, op) and c.args):
            continue
        terms, seen, stack = [], set(), _terms(c.args[0].value)
        while stack:
            t = stack.pop(0)
            if isinstance(t, cst.Name) and t.value in defs and t.value not in seen:
                seen.add(t.value)
                stack += _terms(defs[t.value])
            else:
                terms.append(t)
        if any(isinstance(t, cst.Name) and t.value == ptr for t in terms):
            out.append(terms)
    return out


def _kernel_param(call: cst.Call, k: cst.FunctionDef, arg_text: str) -> str | None:
    params = C.param_names(k)
    pos = [a for a in call.args if a.keyword is None]
    for i, a in enumerate(pos):
        if C.code(a.value) == arg_text and i < len(params):
            return params[i]
    for a in call.args:
        if a.keyword is not None and C.code(a.value) == arg_text:
            return a.keyword.value
    return None


def _candidates(mod: cst.Module) -> tuple[list[_Candidate], list[str]]:
    found: list[_Candidate] = []
    why: list[str] = []
    kernels = {k.name.value for k in C.kernels(mod)}
    for fn in mod.body:
        if not isinstance(fn, cst.FunctionDef) or C.is_jit(fn):
            continue
        launches = [c for c in C.collect(fn, cst.Call) if isinstance(c.func, cst.Subscript)
                    and C.call_name(c) in kernels]
        if len({C.call_name(c) for c in launches}) < 2:
            continue
        for stmt in C.collect(fn, cst.SimpleStatementLine):
            if len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
                continue
            a = stmt.body[0]
            if len(a.targets) != 1 or not isinstance(a.targets[0].target, cst.Name):
                continue
            alloc = _allocation(a.value)
            if alloc is None:
                continue
            name, dims = a.targets[0].target.value, alloc[1]
            cand = _Candidate(name, stmt, alloc[0], dims, alloc[2])
            users = [c for c in launches if any(C.code(x.value) == name for x in c.args)]
            allowed = {name} | {f"{name}.stride({i})" for i in range(len(dims))}
            inside = {id(n) for c in users for x in c.args if C.code(x.value) in allowed
                      for n in C.collect(x.value, cst.Name) if n.value == name}
            stray = [n for n in C.collect(fn, cst.Name) if n.value == name and id(n) not in inside
                     and n is not a.targets[0].target]
            if stray:
                why.append(f"{name} is used outside kernel arguments and their {name}.stride(i) (its layout is "
                           "seen by other code)")
                continue
            if len({C.call_name(c) for c in users}) < 2:
                continue
            missing = [C.call_name(c) for c in users
                       if not all(any(C.code(x.value) == f"{name}.stride({i})" for x in c.args)
                                  for i in range(len(dims)))]
            if missing:
                why.append(f"{missing[0]}'s launch does not pass every {name}.stride(i): the kernel computes "
                           f"the layout itself; pass the strides to let the allocation decide it")
                continue
            cand.launches = [(C.call_name(c), c) for c in users]
            found.append(cand)
    return found, why


def _votes(mod: cst.Module, cand: _Candidate, role: str) -> dict[int, int]:
    votes: dict[int, int] = {}
    op = "load" if role == "consumer" else "store"
    for kname, call in cand.launches:
        k = C.kernel(mod, kname)
        ptr = _kernel_param(call, k, cand.name)
        if ptr is None:
            continue
        dim_of = {p: i for i in range(len(cand.dims))
                  if (p := _kernel_param(call, k, f"{cand.name}.stride({i})")) is not None}
        vectors = _vector_names(k)
        for terms in _accesses(k, ptr, op):
            for t in terms:
                s = _lane_stride(t, vectors)
                if s in dim_of:
                    votes[dim_of[s]] = votes.get(dim_of[s], 0) + 1
    return votes


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    cands, why = _candidates(mod)
    if kernel_name:
        cands = [c for c in cands if any(k == kernel_name for k, _ in c.launches)]
    if not cands:
        raise TransformError("no intermediate tensor allocated in launch() (torch.empty/zeros of a shape tuple) "
                             "is passed with all its strides to two kernels" + (f": {why[0]}" if why else ""))
    role = str(params.get("follow", "consumer"))
    notes = []
    for cand in cands:
        producers = [k for k, c in cand.launches
                     if _accesses(C.kernel(mod, k), _kernel_param(c, C.kernel(mod, k), cand.name) or "", "store")]
        if not producers or len(producers) == len(cand.launches):
            notes.append(f"{cand.name} has no producer (tl.store) and consumer (tl.load) kernel pair")
            continue
        votes = _votes(mod, cand, role)
        if not votes:
            notes.append(f"the {role}'s accesses of {cand.name} walk no stride passed as {cand.name}.stride(i)")
            continue
        inner = max(sorted(votes), key=lambda d: votes[d])
        if inner == cand.innermost:
            notes.append(f"{cand.name}'s dim {inner} ({cand.dims[inner]}), which the {role}'s accesses walk, "
                         "is already its innermost")
            continue
        order = [d for d in range(len(cand.dims)) if d != inner] + [inner]
        inverse = [order.index(d) for d in range(len(cand.dims))]
        shape = cst.Tuple([cst.Element(cst.parse_expression(cand.dims[d])) for d in order])
        pos = next(i for i, a in enumerate(cand.call.args) if a.keyword is None)
        args = list(cand.call.args)
        args[pos] = args[pos].with_changes(value=shape)
        alloc = cand.call.with_changes(args=args)
        new_value = cst.parse_expression(f"_.permute({', '.join(map(str, inverse))})")
        assert isinstance(new_value, cst.Call) and isinstance(new_value.func, cst.Attribute)
        new_value = new_value.with_changes(func=new_value.func.with_changes(value=alloc))
        assign = cand.stmt.body[0]
        assert isinstance(assign, cst.Assign)
        comment = cst.EmptyLine(comment=cst.Comment(
            f"# {cand.name}: dim {inner} ({cand.dims[inner]}) made contiguous for the {role}'s accesses, "
            "same logical shape (kpilot transform relayout_intermediate)"))
        new_stmt = cand.stmt.with_changes(body=[assign.with_changes(value=new_value)],
                                          leading_lines=[*cand.stmt.leading_lines, comment])
        return mod.deep_replace(cand.stmt, new_stmt).code  # type: ignore[union-attr]
    raise TransformError("; ".join(notes))


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
