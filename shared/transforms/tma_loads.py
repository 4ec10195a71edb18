"""TMA tensor-descriptor loads (Hopper): the K loop's pointer-arithmetic tile loads of A and B,

    a_ptrs = a_ptr + base + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        a_ptrs += BLOCK_K * stride_ak

become loads through a device-side tensor descriptor (Triton 3.6, `tl.make_tensor_descriptor`):

    a_desc = tl.make_tensor_descriptor(a_ptr + base, shape=[M, K], strides=[stride_am, 1],
                                       block_shape=[BLOCK_M, BLOCK_K])
    for k in range(0, K, BLOCK_K):
        a = a_desc.load([pid_m * BLOCK_M, k])

so on sm_90 the tile is one `cp.async.bulk.tensor` (TMA) into shared memory instead of per-thread loads,
and the descriptor's bounds replace the mask (out-of-bounds elements read as zero, as `other=0.0` did).
launch() registers the global scratch Triton asks for at launch for device-side descriptors
(`triton.set_allocator`) and hands the kernel each operand through `tma_operand`, which returns the tensor
itself when TMA can read it (last dim contiguous, 16-byte aligned base and row pitch) and otherwise a
zero-padded aligned copy, so the micro and edge shapes with odd dimensions stay correct.

Precondition (on the source, never run): the loads are `tl.load(P, mask=..., other=0)` at the top of a
`for V in range(0, E, STEP)` loop around tl.dot, P = ptr + scalar terms + `x[:, None] * s_row` +
`y[None, :] * s_col` (or no stride: contiguous) with x, y = start + tl.arange(0, BLOCK), P advanced once per
iteration by STEP along one of the two, the mask bounding both tile dims (`x < E1`, `y < E2 - V`); the inner
stride is the tensor's last stride at the launch; and the timed ("full") shape's row pitches are a
multiple of 16 bytes. An odd leading dimension there (the irregular GEMM's K = 4001) is refused: each call
would pay the copy; apply aligned_copies first (its aligned_rows() makes the pitch a multiple of 64).
"""

from __future__ import annotations

import ast

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Param, Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="tma_loads",
    summary="load the K loop's A/B tiles through TMA tensor descriptors (tl.make_tensor_descriptor, Hopper)",
    answers=["k_loop_not_pipelined", "memory_throughput_bound", "roofline_far_below", "scalar_global_access"],
    params=[Param(name="operands", domain=["ab", "a", "b"], default="ab",
                  doc="which tile loads go through a descriptor: both, only A (the first dot operand), only B")],
    precondition="K-loop tile loads from pointer arithmetic with bounds masks, contiguous inner dim, "
                 "16-byte aligned row pitch in the full shape",
)

ELEMENT_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float8_e4m3fn": 1, "float8_e5m2": 1, "int8": 1}

HELPERS = '''

def tma_scratch(size, alignment, stream):
    """Global memory Triton asks for at launch to write the kernel's device-side TMA descriptors into
    (kpilot transform tma_loads)."""
    return torch.empty(size, device="cuda", dtype=torch.int8)


def tma_operand(t):
    """`t` itself when a TMA descriptor can read it (last dim contiguous, base and every other stride a
    multiple of 16 bytes), else a zero-padded copy whose row pitch is (kpilot transform tma_loads)."""
    size = t.element_size()
    if t.stride(-1) == 1 and t.data_ptr() % 16 == 0 and all(s * size % 16 == 0 for s in t.stride()[:-1]):
        return t
    cols = -(-t.shape[-1] * size // 16) * 16 // size
    view = torch.zeros(*t.shape[:-1], cols, device=t.device, dtype=t.dtype)[..., : t.shape[-1]]
    view.copy_(t)
    return view
'''


def _strip_to(e: cst.BaseExpression) -> cst.BaseExpression:
    """`x.to(tl.int64)` -> x (the descriptor addresses in 64 bits itself)."""
    while (isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value == "to"):
        e = e.func.value
    return e


def _terms(e: cst.BaseExpression) -> list[cst.BaseExpression]:
    e = e.value if isinstance(e, cst.Expr) else e
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Add):
        return _terms(e.left) + _terms(e.right)
    return [e]


def _axis(e: cst.BaseExpression) -> tuple[str, int] | None:
    """`x[:, None]` -> (x, 0); `x[None, :]` -> (x, 1); anything else None."""
    e = _strip_to(e)
    if not (isinstance(e, cst.Subscript) and isinstance(e.value, cst.Name) and len(e.slice) == 2):
        return None
    parts = [C.code(s.slice) for s in e.slice]
    if parts == [":", "None"]:
        return e.value.value, 0
    if parts == ["None", ":"]:
        return e.value.value, 1
    return None


def _tile_term(t: cst.BaseExpression) -> tuple[str, int, str] | None:
    """`x[:, None] * s` -> (x, 0, "s"); `x[None, :]` alone -> (x, 1, "") (stride 1)."""
    if (ax := _axis(t)) is not None:
        return ax[0], ax[1], ""
    if isinstance(t, cst.BinaryOperation) and isinstance(t.operator, cst.Multiply):
        for tile, stride in ((t.left, t.right), (t.right, t.left)):
            if (ax := _axis(tile)) is not None and not _axis(stride):
                return ax[0], ax[1], C.code(stride)
    return None


def _assign(stmt: cst.BaseStatement) -> tuple[str, cst.BaseExpression] | None:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
        a = stmt.body[0]
        if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name):
            return a.targets[0].target.value, a.value
    return None


def _offsets(expr: cst.BaseExpression) -> tuple[str, str] | None:
    """`start + tl.arange(0, B)` / `tl.arange(0, B)` -> (start or "0", "B")."""
    ar = [t for t in _terms(expr) if isinstance(t, cst.Call) and C.is_tl(t, "arange")]
    rest = [t for t in _terms(expr) if t not in ar]
    if len(ar) != 1 or len(ar[0].args) != 2 or C.code(ar[0].args[0].value) != "0":
        return None
    start = " + ".join(C.code(t) for t in rest) or "0"
    return start, C.code(ar[0].args[1].value)


class _Load:
    def __init__(self, stmt: cst.SimpleStatementLine, target: str, call: cst.Call) -> None:
        self.stmt, self.target, self.call = stmt, target, call
        self.ptrs = ""
        self.def_stmt: cst.BaseStatement | None = None
        self.adv_stmt: cst.BaseStatement | None = None
        self.base: list[str] = []
        self.dims: list[tuple[str, str]] = []  # (offs variable, stride expr or "") for axes 0 and 1
        self.k_axis = -1
        # what the descriptor is built from
        self.ext: list[str] = []  # the tensor's extent along each tile axis
        self.row_stride = ""
        self.inner_stride = ""  # the kernel's stride parameter of the contiguous dim ("" = literal 1)
        self.block: list[str] = []
        self.coords: list[str] = []  # the tile's start in the K loop


def _bounds(mask: cst.BaseExpression) -> list[tuple[str, str]]:
    """(offs variable, bound text) of every `x[...] < bound` in an &-conjunction."""
    out = []
    e = mask.value if isinstance(mask, cst.Expr) else mask
    stack = [e]
    while stack:
        e = stack.pop()
        if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.BitAnd):
            stack += [e.left, e.right]
        elif (isinstance(e, cst.Comparison) and len(e.comparisons) == 1
              and isinstance(e.comparisons[0].operator, cst.LessThan) and (ax := _axis(e.left)) is not None):
            out.append((ax[0], C.code(e.comparisons[0].comparator)))
        else:
            raise TransformError(f"mask term {C.code(e)!r} is not `offs[...] < bound`; tma_loads reads the "
                                 "tile's extent from bounds masks")
    return out


def _kw(call: cst.Call, names: list[str]) -> dict[str, cst.BaseExpression]:
    """A call's arguments by name (positional ones named in `names` order)."""
    out = {}
    for i, a in enumerate(call.args):
        key = a.keyword.value if a.keyword is not None else (names[i] if i < len(names) else "")
        out[key] = a.value
    return out


def _pair(e: cst.BaseExpression | None, what: str, ptrs: str) -> list[str]:
    if not isinstance(e, cst.Tuple | cst.List) or len(e.elements) != 2:
        raise TransformError(f"{ptrs}: {what} is not a pair; tma_loads rewrites 2-D block pointers")
    return [C.code(x.value) for x in e.elements]


def _block_ptr(k: cst.FunctionDef, ld: _Load, lb: cst.IndentedBlock, var: str, step: str) -> None:
    """`p = tl.make_block_ptr(base, shape, strides, offsets, block_shape, order=(1, 0))`, loaded in the
    K loop and moved by `p = tl.advance(p, (0, STEP))` (or `(STEP, 0)`) once per iteration."""
    body = k.body
    assert isinstance(body, cst.IndentedBlock)
    ld.def_stmt = next(s for s in body.body if (a := _assign(s)) and a[0] == ld.ptrs)
    make = _assign(ld.def_stmt)[1]  # type: ignore[index]
    assert isinstance(make, cst.Call)
    a = _kw(make, ["base", "shape", "strides", "offsets", "block_shape", "order"])
    if _pair(a.get("order"), "order", ld.ptrs) != ["1", "0"]:
        raise TransformError(f"{ld.ptrs}'s order is not (1, 0): its contiguous dim is not the last one")
    ld.ext = _pair(a.get("shape"), "shape", ld.ptrs)
    ld.row_stride, inner = _pair(a.get("strides"), "strides", ld.ptrs)
    ld.inner_stride = "" if inner == "1" else inner
    ld.block = _pair(a.get("block_shape"), "block_shape", ld.ptrs)
    start = _pair(a.get("offsets"), "offsets", ld.ptrs)
    ld.base = [C.code(t) for t in _terms(a["base"])] if "base" in a else []
    advs = [s for s in lb.body if (x := _assign(s)) and x[0] == ld.ptrs]
    adv = _assign(advs[0])[1] if len(advs) == 1 else None  # type: ignore[index]
    if not (isinstance(adv, cst.Call) and C.is_tl(adv, "advance") and len(adv.args) == 2
            and C.code(adv.args[0].value) == ld.ptrs):
        raise TransformError(f"{ld.ptrs} is not moved once per K iteration by `{ld.ptrs} = tl.advance({ld.ptrs}, ...)`")
    ld.adv_stmt = advs[0]
    moves = _pair(adv.args[1].value, "the advance", ld.ptrs)
    if sorted(moves) != sorted(["0", step]):
        raise TransformError(f"{ld.ptrs} advances by {moves}, not the loop step {step} along one axis")
    ld.k_axis = moves.index(step)
    if start[ld.k_axis] != "0":
        raise TransformError(f"{ld.ptrs}'s K offset starts at {start[ld.k_axis]}, not 0")
    ld.coords = [var if ax == ld.k_axis else start[ax] for ax in (0, 1)]
    kw = {x.keyword.value: x.value for x in ld.call.args[1:] if x.keyword is not None}
    if set(kw) - {"boundary_check", "padding_option"}:
        raise TransformError(f"tl.load for {ld.target} takes {sorted(kw)}: tma_loads keeps only "
                             "boundary_check/padding_option")
    if "padding_option" in kw and C.code(kw["padding_option"]).strip("\"'") not in ("zero", ""):
        raise TransformError(f"tl.load for {ld.target} pads with {C.code(kw['padding_option'])}; a descriptor "
                             "pads with zero here")
    uses = [n for n in C.collect(k, cst.Name) if n.value == ld.ptrs]
    if len(uses) != 4:  # definition, load, advance target and argument
        raise TransformError(f"{ld.ptrs} is used outside its load and advance; tma_loads would drop it")


def _analyse(k: cst.FunctionDef) -> tuple[cst.For, list[_Load], dict[str, tuple[str, str]]]:
    body = k.body
    assert isinstance(body, cst.IndentedBlock)
    kn = k.name.value
    loops = [s for s in body.body if isinstance(s, cst.For)
             and any(C.is_tl(c, "dot") for c in C.collect(s.body, cst.Call))]
    if not loops:
        raise TransformError(f"{kn} has no top-level `for` loop around a tl.dot (the K loop)")
    loop = loops[0]
    it = loop.iter
    if not (isinstance(it, cst.Call) and C.code(it.func) in ("range", "tl.range") and len(it.args) >= 3
            and C.code(it.args[0].value) == "0" and isinstance(loop.target, cst.Name)):
        raise TransformError(f"{kn}'s K loop is not `for k in range(0, K, BLOCK_K)` (start 0, a step)")
    var, step = loop.target.value, C.code(it.args[2].value)
    offs = {a[0]: o for s in body.body if (a := _assign(s)) and (o := _offsets(a[1])) is not None}
    dots = [c for c in C.collect(loop.body, cst.Call) if C.is_tl(c, "dot")]
    operands = [C.code(a.value) for c in dots for a in c.args[:2]]
    loads: list[_Load] = []
    lb = loop.body
    assert isinstance(lb, cst.IndentedBlock)
    for s in lb.body:
        a = _assign(s)
        if a and isinstance(a[1], cst.Call) and C.is_tl(a[1], "load") and a[0] in operands:
            loads.append(_Load(s, a[0], a[1]))  # type: ignore[arg-type]
    nested = [c for s in lb.body if not isinstance(s, cst.SimpleStatementLine)
              for c in C.collect(s, cst.Call) if C.is_tl(c, "load")]
    if nested:
        raise TransformError(f"{kn}'s K loop loads under a branch or inner loop; tma_loads rewrites "
                             "straight-line tile loads only")
    if not loads:
        raise TransformError(f"{kn}'s K loop has no `x = tl.load(ptrs, ...)` feeding its tl.dot")
    for ld in loads:
        args = ld.call.args
        if not args or not isinstance(args[0].value, cst.Name) or args[0].keyword is not None:
            raise TransformError(f"tl.load for {ld.target} does not take a pointer variable")
        ld.ptrs = args[0].value.value
        made = [a[1] for s in body.body if (a := _assign(s)) and a[0] == ld.ptrs]
        if made and isinstance(made[0], cst.Call) and C.is_tl(made[0], "make_block_ptr"):
            _block_ptr(k, ld, lb, var, step)
            continue
        kw = {a.keyword.value: a.value for a in args[1:] if a.keyword is not None}
        if set(kw) - {"mask", "other"} or len(args) > 1 + len(kw):
            raise TransformError(f"tl.load for {ld.target} takes {sorted(kw)}: tma_loads keeps only mask/other")
        if "other" in kw and C.code(kw["other"]) not in ("0", "0.0"):
            raise TransformError(f"tl.load for {ld.target} pads with {C.code(kw['other'])}; a descriptor pads "
                                 "with zero")
        defs = [s for s in body.body if (a := _assign(s)) and a[0] == ld.ptrs]
        if len(defs) != 1:
            raise TransformError(f"{ld.ptrs} is not assigned once at the top of {kn}")
        ld.def_stmt = defs[0]
        advs = [s for s in lb.body if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1
                and isinstance(s.body[0], cst.AugAssign) and C.code(s.body[0].target) == ld.ptrs]
        if len(advs) != 1 or not isinstance(advs[0].body[0].operator, cst.AddAssign):
            raise TransformError(f"{ld.ptrs} is not advanced once (`{ld.ptrs} += ...`) in the K loop")
        ld.adv_stmt = advs[0]
        uses = [n for n in C.collect(k, cst.Name) if n.value == ld.ptrs]
        if len(uses) != 3:  # definition, load, advance
            raise TransformError(f"{ld.ptrs} is used outside its load and advance; tma_loads would drop it")
        dims: dict[int, tuple[str, str]] = {}
        for t in _terms(_assign(ld.def_stmt)[1]):  # type: ignore[index]
            tt = _tile_term(t)
            if tt is None:
                if any(_axis(x) for x in C.collect(t, cst.Subscript)):
                    raise TransformError(f"{ld.ptrs}: term {C.code(t)!r} is not `offs[...] * stride`")
                ld.base.append(C.code(t))
                continue
            if tt[1] in dims or tt[0] not in offs:
                raise TransformError(f"{ld.ptrs}: {C.code(t)!r} is not one tile axis of `start + tl.arange`")
            dims[tt[1]] = (tt[0], tt[2])
        if set(dims) != {0, 1} or not ld.base:
            raise TransformError(f"{ld.ptrs} is not a 2-D tile `ptr + x[:, None] * s0 + y[None, :] * s1`")
        ld.dims = [dims[0], dims[1]]
        adv = advs[0].body[0].value
        got = C.code(adv)
        for ax in (0, 1):
            s = ld.dims[ax][1]
            if got in ((f"{step} * {s}", f"{s} * {step}") if s else (step,)):
                ld.k_axis = ax
        if ld.k_axis < 0:
            raise TransformError(f"{ld.ptrs} advances by {got!r}, not the loop step {step} times one tile "
                                 "axis's stride")
        if offs[ld.dims[ld.k_axis][0]][0] != "0":
            raise TransformError(f"{ld.ptrs}'s K offsets do not start at 0")
        if "mask" not in kw:
            raise TransformError(f"tl.load for {ld.target} has no mask: tma_loads reads the extents from it")
        bounds = dict(_bounds(kw["mask"]))
        ext = []
        for ax in (0, 1):
            b = bounds.get(ld.dims[ax][0])
            if b is None:
                raise TransformError(f"the mask of {ld.target} does not bound {ld.dims[ax][0]}")
            if ax == ld.k_axis:
                head, sep, tail = b.rpartition(" - ")
                if not sep or tail != var:
                    raise TransformError(f"the K bound of {ld.target} is {b!r}, not `E - {var}`")
                b = head
            ext.append(b)
        ld.ext = ext
        ld.row_stride, ld.inner_stride = ld.dims[0][1] or "1", ld.dims[1][1]
        ld.block = [offs[ld.dims[0][0]][1], offs[ld.dims[1][0]][1]]
        ld.coords = [var if ax == ld.k_axis else offs[ld.dims[ax][0]][0] for ax in (0, 1)]
    return loop, loads, offs


def _pitch_keys(mod: cst.Module, tensors: list[str], launcher: cst.FunctionDef) -> dict[str, str]:
    """For each launched tensor unpacked from `inputs`, the SHAPES key of its last dim in make_inputs
    (`torch.randn(..., shape["k"], ...)`), where the source says it plainly."""
    unpack: list[str] = []
    for a in C.collect(launcher, cst.Assign):
        if C.code(a.value) == "inputs" and isinstance(a.targets[0].target, cst.Tuple):
            unpack = [C.code(e.value) for e in a.targets[0].target.elements]
    mk = C.function(mod, "make_inputs")
    if mk is None or not unpack:
        return {}
    rets = C.collect(mk, cst.Return)
    if len(rets) != 1 or not isinstance(rets[0].value, cst.Tuple):
        return {}
    made = [C.code(e.value) for e in rets[0].value.elements]
    allocs = {}
    for a in C.collect(mk, cst.Assign):
        if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name):
            calls = [c for c in C.collect(a.value, cst.Call)
                     if C.code(c.func) in ("torch.randn", "torch.rand", "torch.empty", "torch.zeros", "torch.ones")]
            if calls:
                dims = [x for x in calls[0].args if x.keyword is None]
                last = dims[-1].value if dims else None
                if (isinstance(last, cst.Subscript) and C.code(last.value) == "shape"
                        and isinstance(last.slice[0].slice, cst.Index)
                        and isinstance(last.slice[0].slice.value, cst.SimpleString)):
                    allocs[a.targets[0].target.value] = last.slice[0].slice.value.evaluated_value
    out = {}
    for t in tensors:
        if t in unpack and unpack.index(t) < len(made) and made[unpack.index(t)] in allocs:
            out[t] = allocs[made[unpack.index(t)]]
    return out


def _literal(mod: cst.Module, name: str) -> object:
    got = C.top_assign(mod, name)
    if got is None:
        return None
    try:
        return ast.literal_eval(C.code(got[1].value))
    except (ValueError, SyntaxError):
        return None


def _check_full_pitch(mod: cst.Module, launcher: cst.FunctionDef, tensors: list[str], kn: str) -> None:
    aligned = {C.code(a.targets[0].target) for a in C.collect(launcher, cst.Assign)
               if isinstance(a.value, cst.Call) and C.code(a.value.func) == "aligned_rows"}
    shapes, dtype = _literal(mod, "SHAPES"), _literal(mod, "DTYPE")
    if not isinstance(shapes, dict) or not isinstance(shapes.get("full"), dict):
        return  # nothing to read: tma_operand() checks at run time
    size = ELEMENT_BYTES.get(dtype if isinstance(dtype, str) else "", 2)
    for t, key in _pitch_keys(mod, tensors, launcher).items():
        v = shapes["full"].get(key)
        if t not in aligned and isinstance(v, int) and v * size % 16:
            raise TransformError(
                f"{t}'s row pitch in the full shape is {key} = {v} elements ({v * size} B), not a multiple of "
                f"16 bytes: TMA cannot read it and every timed call would pay a padded copy; apply "
                f"aligned_copies first (aligned_rows pads the pitch), then tma_loads")


def _launch_arg(call: cst.Call, params: list[str], name: str) -> cst.BaseExpression | None:
    pos = [a for a in call.args if a.keyword is None and a.star == ""]
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    i = params.index(name)
    return pos[i].value if i < len(pos) else None


class _Prelude(cst.CSTTransformer):
    """Insert `lines` before every simple statement that holds a launch of `kernel`."""

    def __init__(self, kernel: str, lines: str) -> None:
        self.kernel, self.lines, self.done = kernel, lines, 0

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        body: list[cst.BaseStatement] = []
        for s in updated.body:
            if isinstance(s, cst.SimpleStatementLine) and any(
                    isinstance(c.func, cst.Subscript) and C.call_name(c) == self.kernel for c in C.collect(s, cst.Call)):
                pre = C.stmts(self.lines)
                pre[0] = pre[0].with_changes(leading_lines=[*s.leading_lines, *pre[0].leading_lines])
                body += [*pre, s.with_changes(leading_lines=[])]
                self.done += 1
            else:
                body.append(s)
        return updated.with_changes(body=body)


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    k = C.kernel(mod, kernel_name)
    kn = k.name.value
    if any(C.is_tl(c, "make_tensor_descriptor") for c in C.collect(k, cst.Call)):
        raise TransformError(f"{kn} already loads through tensor descriptors")
    if C.function(mod, "tma_operand") is not None:
        raise TransformError("the task already defines tma_operand (tma_loads was applied)")
    launches = C.launch_calls(mod, kn)
    if not launches:
        raise TransformError(f"no `{kn}[grid](...)` launch call found outside the kernels")
    launcher = next(fn for fn in mod.body if isinstance(fn, cst.FunctionDef) and not C.is_jit(fn)
                    and any(c in C.collect(fn, cst.Call) for c in launches))
    texts = {C.code(a.value) for c in launches for a in c.args}
    strided = [t for t in sorted(texts) if t.isidentifier() and any(x.startswith(f"{t}.stride(") for x in texts)]
    _check_full_pitch(mod, launcher, strided, kn)
    loop, loads, _ = _analyse(k)
    dot = next(c for c in C.collect(loop.body, cst.Call) if C.is_tl(c, "dot"))
    first = C.code(dot.args[0].value)
    want = params.get("operands", "ab")
    chosen = [ld for ld in loads if want == "ab" or (want == "a") == (ld.target == first)]
    if not chosen:
        raise TransformError(f"no tile load of {kn} is operand {want!r} of its tl.dot")
    kparams = C.param_names(k)
    tensors: list[str] = []
    for ld in chosen:
        ptr = [b for b in ld.base if b in kparams]
        if len(ptr) != 1:
            raise TransformError(f"{ld.ptrs} does not start from one pointer parameter of {kn}")
        for call in launches:
            t = _launch_arg(call, kparams, ptr[0])
            if not isinstance(t, cst.Name):
                raise TransformError(f"the launch passes {C.code(t) if t else 'nothing'} as {ptr[0]}, not a "
                                     "tensor variable tma_loads can check")
            inner = ld.inner_stride
            if inner:
                passed = _launch_arg(call, kparams, inner) if inner in kparams else None
                strides = [a.value for a in call.args if isinstance(a.value, cst.Call)
                           and C.code(a.value.func) == f"{t.value}.stride" and a.value.args]
                last = max((C.code(s.args[0].value) for s in strides), default="")  # type: ignore[union-attr]
                if passed is None or C.code(passed) != f"{t.value}.stride({last})":
                    raise TransformError(f"{inner} (the inner dim of {ld.target}'s tile) is not {t.value}'s last "
                                         "stride at the launch; TMA needs the contiguous dim innermost")
            if t.value not in tensors:
                tensors.append(t.value)
        ld.ptr = ptr[0]  # type: ignore[attr-defined]
    # the kernel: descriptors where the pointers were built, descriptor loads, no pointer advances
    body = k.body
    assert isinstance(body, cst.IndentedBlock)
    lb = loop.body
    assert isinstance(lb, cst.IndentedBlock)
    new_lb = lb
    new_body = body
    for ld in chosen:
        desc = C.fresh(mod, ld.target + "_desc" if ld.target.isidentifier() else "desc")
        base = " + ".join(ld.base)
        ext, coords = ld.ext, ld.coords
        head = f"{desc} = tl.make_tensor_descriptor("
        pad = " " * len(head)  # LibCST adds the block's indent to continuation lines
        line = (f"{head}{base}, shape=[{ext[0]}, {ext[1]}], strides=[{ld.row_stride}, 1],\n"
                f"{pad}block_shape=[{ld.block[0]}, {ld.block[1]}])\n")
        d = C.stmts(line)[0]
        assert ld.def_stmt is not None and ld.adv_stmt is not None
        d = d.with_changes(leading_lines=[*ld.def_stmt.leading_lines, cst.EmptyLine(comment=cst.Comment(
            f"# TMA descriptor for {ld.target}'s tiles (kpilot transform tma_loads): bounds pad with zero"))])
        new_body = C.replace_stmts(new_body, ld.def_stmt, [d])
        ld_new = C.stmts(f"{ld.target} = {desc}.load([{coords[0]}, {coords[1]}])\n")[0]
        ld_new = ld_new.with_changes(leading_lines=ld.stmt.leading_lines,
                                     trailing_whitespace=ld.stmt.trailing_whitespace)
        new_lb = C.replace_stmts(new_lb, ld.stmt, [ld_new])
        new_lb = C.replace_stmts(new_lb, ld.adv_stmt, [])
    new_loop = loop.with_changes(body=new_lb)
    new_body = C.replace_stmts(new_body, loop, [new_loop])
    mod = mod.deep_replace(k, k.with_changes(body=new_body))  # type: ignore[assignment]
    # the launch: descriptor scratch, operands TMA can read
    pre = (f"# TMA operands (kpilot transform tma_loads): {', '.join(tensors)} as they are when aligned, "
           "else padded copies\n"
           "triton.set_allocator(tma_scratch)\n" + "".join(f"{t} = tma_operand({t})\n" for t in tensors))
    launcher = C.function(mod, launcher.name.value)  # type: ignore[assignment]
    t = _Prelude(kn, pre)
    new_launcher = launcher.visit(t)  # type: ignore[union-attr]
    if not t.done:
        raise TransformError(f"the launch of {kn} is not a statement of its own in {launcher.name.value}()")
    mod = mod.deep_replace(launcher, new_launcher)  # type: ignore[arg-type]
    if "import torch\n" not in mod.code or "import triton\n" not in mod.code:
        raise TransformError("the task does not `import torch` and `import triton` (launch() needs both)")
    helper = cst.parse_module(HELPERS.lstrip("\n")).body
    j = next(n for n, s in enumerate(mod.body) if isinstance(s, cst.FunctionDef) and s.name.value == launcher.name.value)
    helper = [helper[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]), *helper[1:]]
    fn_now = mod.body[j].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
    mod = mod.with_changes(body=[*mod.body[:j], *helper, fn_now, *mod.body[j + 1:]])
    return mod.code


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
