"""Shared-memory tiled transpose for a naive CUDA C++ transpose: a kernel whose one copy
`out[f(X, Y)] = in[g(X, Y)]` is contiguous in threadIdx.x on one side and strided on the other (one
sector per lane) becomes a T x T tile staged through `__shared__` memory (+PAD columns against bank
conflicts): threadIdx.x walks the contiguous dimension of the load in the first pass and that of the
store in the second, BLOCK_Y rows per pass, so both global sides coalesce. The launch's grid y extent
counts tiles of T rows instead of BLOCK_Y rows (block dims unchanged: T x BLOCK_Y threads).

Precondition (read from CUDA_SOURCE and launch()): the kernel body is straight-line: index declarations
`X = blockIdx.x * T + threadIdx.x` and `Y = blockIdx.y * BY + threadIdx.y` (T, BY: blockDim.x/.y or
the macros the launch's block=(T, BY, 1) names), optional `if (...) return;` guards, and one guarded
copy whose indices are sums of products with X bare on one side and Y bare on the other; the tile
extent T reaches the source as a macro; launch passes grid=(..., ... BY ..., ...).
"""

from __future__ import annotations

import re

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Param, Transform, TransformError, TransformSpec
from shared.transforms.cuda_c import Stmt, Tok, span, split_top, statements, strip_cast, tokens, words
from shared.transforms.cuda_source import kernel_text, source_of, with_text

SPEC = TransformSpec(
    name="cuda_tiled_transpose",
    summary="stage a naive transpose's copy through a padded T x T __shared__ tile: both global sides coalesce",
    answers=["transposed_access_no_staging", "uncoalesced_strided_access"],
    params=[Param(name="pad", domain=[1, 0], default=1,
                  doc="extra words per tile row; 1 keeps the column read of the tile on 32 banks")],
    language="cuda",
    precondition="straight-line kernel: X/Y from blockIdx*T+threadIdx, guards, one copy out[..X..] = "
                 "in[..Y..] contiguous in X on one side only; launch block=(T, BY, 1) with T a macro; "
                 "grid's y entry names BY",
)


class _Index:
    """One thread-index declaration `X = blockIdx.a * E + threadIdx.a`."""

    def __init__(self, ctype: str, name: str, axis: str, extent: str) -> None:
        self.ctype, self.name, self.axis, self.extent = ctype, name, axis, extent


def _index_decl(text: str, toks: list[Tok]) -> list[_Index] | None:
    """The declarations of a statement `int c = ..., r = ...;` when each is a thread index, else None."""
    words_ = []
    i = 0
    while i < len(toks) and re.fullmatch(r"[A-Za-z_]\w*", toks[i].text) and not (
            i + 1 < len(toks) and toks[i + 1].text == "="):
        words_.append(toks[i].text)
        i += 1
    if not words_ or i >= len(toks):
        return None
    out = []
    for _, part in split_top(toks[i:], {","}):
        if len(part) < 3 or part[1].text != "=":
            return None
        got = _thread_index(part[2:])
        if got is None:
            return None
        out.append(_Index(" ".join(words_), part[0].text, *got))
    return out


def _thread_index(toks: list[Tok]) -> tuple[str, str] | None:
    """`blockIdx.a * E + threadIdx.a` (any order) -> (a, E); anything else -> None."""
    terms = split_top(toks, {"+", "-"})
    if len(terms) != 2 or any(sep == "-" for sep, _ in terms):
        return None
    axis_t = axis_b = extent = None
    for _, t in terms:
        w = words(strip_cast(t))
        m = re.fullmatch(r"threadIdx\.([xy])", w)
        if m:
            axis_t = m.group(1)
            continue
        fs = [words(strip_cast(f)) for _, f in split_top(t, {"*"})]
        if len(fs) != 2:
            return None
        for a, b in (fs, fs[::-1]):
            m = re.fullmatch(r"blockIdx\.([xy])", a)
            if m and re.fullmatch(r"blockDim\.[xy]|[A-Za-z_]\w*|\d+", b):
                axis_b, extent = m.group(1), b
                break
        else:
            return None
    if axis_t is None or axis_t != axis_b or extent is None:
        return None
    if extent.startswith("blockDim.") and extent[-1] != axis_t:
        return None
    return axis_t, extent


def _roles(text: str, index: list[Tok], names: set[str]) -> dict[str, str]:
    """For each thread-index variable in an index expression: "unit" (a bare term) or "strided" (a term
    multiplied by something). Raises on a shape the rewrite cannot reason about."""
    out: dict[str, str] = {}
    for sep, term in split_top(index, {"+", "-"}):
        factors = [strip_cast(f) for _, f in split_top(term, {"*"})]
        used = {t.text for f in factors for t in f} & names
        if not used:
            continue
        if sep == "-" or len(used) > 1 or split_top(term, {"/", "%", "<<", ">>", "&", "|", "^"})[1:]:
            raise TransformError(f"index `{span(text, index)}`: term `{span(text, term)}` is not a "
                                 "positive product with one thread index")
        v = used.pop()
        bare = len(factors) == 1 and words(factors[0]) == v
        if not bare and not any(words(f) == v for f in factors):
            raise TransformError(f"index `{span(text, index)}`: {v} is nested inside `{span(text, term)}`")
        if v in out:
            raise TransformError(f"index `{span(text, index)}` uses {v} in two terms")
        out[v] = "unit" if bare else "strided"
    return out


def _copy(toks: list[Tok]) -> tuple[str, list[Tok], str, list[Tok]] | None:
    """`out[i] = in[j]` -> (out, i, in, j)."""
    t = [x.text for x in toks]
    if len(t) < 7 or t[1] != "[" or t[-1] != "]" or not re.fullmatch(r"[A-Za-z_]\w*", t[0]):
        return None
    depth = 0
    for k, x in enumerate(t):
        depth += x == "["
        depth -= x == "]"
        if depth == 0 and x == "]":
            break
    else:
        return None
    if k + 3 >= len(t) or t[k + 1] != "=" or t[k + 3] != "[" or not re.fullmatch(r"[A-Za-z_]\w*", t[k + 2]):
        return None
    return t[0], toks[2:k], t[k + 2], toks[k + 4: -1]


class _Shape:
    def __init__(self) -> None:
        self.index: dict[str, _Index] = {}
        self.guards: list[str] = []
        self.copy: tuple[str, list[Tok], str, list[Tok]] | None = None


def _read(text: str, body: list[Stmt], shape: _Shape, guard: str = "") -> None:
    for s in body:
        if s.kind == "block":
            _read(text, s.body, shape, guard)
            continue
        if s.kind == "if":
            cond = span(text, s.cond)
            if len(s.body) == 1 and s.body[0].kind == "simple" and words(s.body[0].toks) == "return":
                if shape.copy is not None:
                    raise TransformError("a `return` guard after the copy")
                shape.guards.append(f"!({cond})")
                continue
            inner = f"({guard}) && ({cond})" if guard else cond
            _read(text, s.body, shape, inner)
            continue
        decl = _index_decl(text, s.toks)
        if decl is not None:
            for d in decl:
                if d.axis in {i.axis for i in shape.index.values()}:
                    raise TransformError(f"two thread indices along {d.axis}")
                shape.index[d.name] = d
            continue
        cp = _copy(s.toks)
        if cp is None:
            raise TransformError(f"the kernel body has `{span(text, s.toks)}`: only thread-index declarations, "
                                 "`if (...) return;` guards and one copy `out[...] = in[...]` are rewritten")
        if shape.copy is not None:
            raise TransformError("the kernel body has more than one copy statement")
        shape.copy = cp
        if guard:
            shape.guards.append(guard)


def _launch(mod: cst.Module) -> tuple[cst.FunctionDef, list[str], cst.Tuple]:
    """(the launch function, block=(...) entries, the grid tuple) of the call that passes block=."""
    for fn in mod.body:
        if not isinstance(fn, cst.FunctionDef):
            continue
        for call in C.collect(fn, cst.Call):
            kw = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
            if "block" not in kw:
                continue
            if not isinstance(kw["block"], cst.Tuple):
                raise TransformError("the launch passes block= as something other than a tuple literal")
            block = [C.code(e.value) for e in kw["block"].elements]
            grid = kw.get("grid")
            if isinstance(grid, cst.Name):
                assigns = [a for a in C.collect(fn, cst.Assign) if any(
                    isinstance(t.target, cst.Name) and t.target.value == grid.value for t in a.targets)]
                grid = assigns[-1].value if len(assigns) == 1 else None
            if not isinstance(grid, cst.Tuple) or len(grid.elements) < 2:
                raise TransformError("the launch's grid= is not a tuple literal (or one name assigned one "
                                     "once in launch()) with a y entry")
            return fn, block, grid
    raise TransformError("no launch call with block=(x, y, z) found")


class _Rename(cst.CSTTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new, self.hits = old, new, 0

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        if updated.value == self.old:
            self.hits += 1
            return updated.with_changes(value=self.new)
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)


def _fresh(text: str, base: str) -> str:
    name, i = base, 2
    while re.search(rf"\b{name}\b", text):
        name, i = f"{base}_{i}", i + 1
    return name


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    node, text, name = source_of(mod)
    k = kernel_text(text, name)
    body = text[k.body_start: k.body_end]
    toks, comments = tokens(body)
    if "__shared__" in {t.text for t in toks}:
        raise TransformError(f"{name} already uses __shared__ memory (a staged kernel, not a naive copy)")
    shape = _Shape()
    _read(body, statements(toks), shape)
    by_axis = {i.axis: i for i in shape.index.values()}
    if set(by_axis) != {"x", "y"}:
        raise TransformError("the kernel needs one index from threadIdx.x and one from threadIdx.y "
                             f"(found {sorted(by_axis)})")
    if shape.copy is None:
        raise TransformError(f"{name} has no copy statement `out[...] = in[...]`")
    out_arr, out_idx, in_arr, in_idx = shape.copy
    xv, yv = by_axis["x"].name, by_axis["y"].name
    load, store = _roles(body, in_idx, {xv, yv}), _roles(body, out_idx, {xv, yv})
    unit_load = [v for v, r in load.items() if r == "unit"]
    unit_store = [v for v, r in store.items() if r == "unit"]
    if set(load) != {xv, yv} or set(store) != {xv, yv} or len(unit_load) != 1 or len(unit_store) != 1:
        raise TransformError(f"the copy `{out_arr}[...] = {in_arr}[...]` does not index both sides with {xv} "
                             f"and {yv}, one bare and one strided")
    if unit_load == unit_store:
        raise TransformError(f"both sides of the copy are contiguous in {unit_load[0]}: no transpose to stage")
    if in_arr not in k.params or "*" not in k.params[in_arr]:
        raise TransformError(f"{in_arr} is not a pointer parameter of {name}")
    elem = " ".join(w for w in k.params[in_arr].replace("*", " ").split()
                    if w not in ("const", "__restrict__", "__restrict", "restrict", "volatile"))

    fn, block, grid = _launch(mod)
    if len(block) < 2 or any(not re.fullmatch(r"[A-Za-z_]\w*", b) for b in block[:2]) or block[2:] not in ([], ["1"]):
        raise TransformError(f"launch block={tuple(block)}: the rewrite needs (T, BY, 1) with T and BY named "
                             "(CONFIG keys / launch() parameters)")
    bx, bby = block[0], block[1]
    ex, ey = by_axis["x"].extent, by_axis["y"].extent
    if ex not in ("blockDim.x", bx) or ey not in ("blockDim.y", bby):
        raise TransformError(f"the indices step blocks by {ex} and {ey}, the launch's block is ({bx}, {bby}, 1): "
                             "they must agree")
    cfg = C.top_assign(mod, "CONFIG")
    keys = {C.code(e.key).strip("\"'") for e in cfg[1].value.elements  # type: ignore[union-attr]
            if isinstance(e, cst.DictElement)} if cfg and isinstance(cfg[1].value, cst.Dict) else set()
    launch_text = C.code(fn)
    if bx not in keys or f"-D{bx}=" not in launch_text:
        raise TransformError(f"the tile extent {bx} must reach the source as a macro: a CONFIG key that "
                             f"launch() passes to the compiler as -D{bx}=")

    ren = _Rename(bby, bx)
    y_entry = grid.elements[1].value.visit(ren)
    if ren.hits == 0:
        raise TransformError(f"the grid's y entry `{C.code(grid.elements[1].value)}` does not name {bby}: "
                             "cannot make it count tiles of T rows")
    els = list(grid.elements)
    els[1] = els[1].with_changes(value=y_entry)
    new_fn = fn.deep_replace(grid, grid.with_changes(elements=els))

    tile, j = _fresh(text, "kp_tile"), _fresh(text, "kp_j")
    t = bx
    ystep = "blockDim.y" if ey == "blockDim.y" else bby
    cond = shape.guards[0] if len(shape.guards) == 1 else " && ".join(f"({g})" for g in shape.guards)
    guard = f"if ({cond}) " if cond else ""
    base = {xv: f"blockIdx.x * {t}", yv: f"blockIdx.y * {t}"}
    ctype = {xv: by_axis["x"].ctype, yv: by_axis["y"].ctype}

    def bind(lane: str, other: str, ind: str) -> str:
        return (f"{ind}{ctype[lane]} {lane} = {base[lane]} + threadIdx.x;\n"
                f"{ind}{ctype[other]} {other} = {base[other]} + {j};\n")

    first, second = unit_load[0], unit_store[0]
    ind = "        "
    kept = "".join(f"    {c}\n" for c in comments)
    new_body = (
        f"\n{kept}"
        f"    // kpilot transform cuda_tiled_transpose: a {t} x {t} tile staged through shared memory,\n"
        f"    // {ystep} rows per pass; threadIdx.x walks {first} reading {in_arr}, {second} writing {out_arr}\n"
        f"    __shared__ {elem} {tile}[{t}][{t} + {params['pad']}];\n"
        f"    for (int {j} = threadIdx.y; {j} < {t}; {j} += {ystep}) {{\n"
        + bind(first, second, ind)
        + f"{ind}{guard}{tile}[{j}][threadIdx.x] = {in_arr}[{span(body, in_idx)}];\n"
        "    }\n"
        "    __syncthreads();\n"
        f"    for (int {j} = threadIdx.y; {j} < {t}; {j} += {ystep}) {{\n"
        + bind(second, first, ind)
        + f"{ind}{guard}{out_arr}[{span(body, out_idx)}] = {tile}[threadIdx.x][{j}];\n"
        "    }\n"
    )
    new_text = text[: k.body_start] + new_body + text[k.body_end:]
    mod = mod.deep_replace(fn, new_fn)  # type: ignore[assignment]
    node, _, _ = source_of(mod)
    return mod.deep_replace(node, with_text(node, new_text)).code  # type: ignore[union-attr]


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
