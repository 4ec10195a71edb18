"""Read the global memory operations out of Triton's TTGIR: layout, source location, width.

The `#blocked` layouts, the `#loc` table (resolved through names, call sites and fusions to
file:line:col) and every `tt.load` / `tt.store` / `ttg.async_copy_global_to_local` / atomic with its
pointer tensor's shape, element type and layout. How wide the compiler actually vectorised each op is
read from the PTX by shared/parsers/ptx.py `ptx_access_bytes`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# `#blocked1 = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1],
#  order = [1, 0]}>`
_BLOCKED = re.compile(r"^(#\w+) = #ttg\.blocked<\{(.*)\}>\s*$")
_FIELD = re.compile(r"(\w+) = \[([\d,\s]*)\]")
_SLICE = re.compile(r"^(#\w+) = #ttg\.slice<\{dim = (\d+), parent = (#\w+)\}>\s*$")
_LOC_DEF = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$")
_LOC_FILE = re.compile(r'^"([^"]*)":(\d+):(\d+)')
_LOC_REF = re.compile(r"#loc\d*")
_OP_LOC = re.compile(r"loc\((#loc\d*|\"[^\"]*\":\d+:\d+)\)\s*$")
_NUM_WARPS = re.compile(r'"ttg\.num-warps" = (\d+)')
_FUNC = re.compile(r"tt\.func (?:public |private )?@(\w+)")
# the pointer tensor type: tensor<32x32x!tt.ptr<f32>, #blocked> (or a scalar !tt.ptr<f32>)
_PTR_TENSOR = re.compile(r"tensor<([\dx]*)x?!tt\.ptr<(\w+)>(?:, (#ttg\.slice<\{[^}]*\}>|#\w+))?>")
_INLINE_SLICE = re.compile(r"^#ttg\.slice<\{dim = (\d+), parent = (#\w+)\}>$")
_PTR_SCALAR = re.compile(r"!tt\.ptr<(\w+)>")
_MEMOPS = (("tt.load ", "load"), ("tt.store ", "store"), ("ttg.async_copy_global_to_local ", "async_copy"),
           ("tt.atomic_rmw ", "atomic"), ("tt.atomic_cas ", "atomic"))
_ELEM_BITS = {"f32": 32, "f16": 16, "bf16": 16, "f64": 64, "i1": 8, "i8": 8, "i16": 16, "i32": 32,
              "i64": 64, "f8E4M3FN": 8, "f8E5M2": 8, "f8E4M3FNUZ": 8, "f8E5M2FNUZ": 8}


@dataclass(frozen=True)
class BlockedLayout:
    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]
    # Set for a #ttg.slice of a blocked parent: the parent dim the slice removed (the tensor has rank - 1).
    sliced_dim: int | None = None

    def text(self) -> str:
        base = (f"sizePerThread={list(self.size_per_thread)} threadsPerWarp={list(self.threads_per_warp)} "
                f"warpsPerCTA={list(self.warps_per_cta)} order={list(self.order)}")
        return base if self.sliced_dim is None else f"slice(dim={self.sliced_dim}) of {base}"


@dataclass(frozen=True)
class MemOp:
    kind: str  # "load", "store", "async_copy", "atomic"
    file: str
    line: int
    col: int
    shape: tuple[int, ...]  # () for a scalar pointer
    elem_type: str  # "f32", ...
    elem_bytes: int
    layout_name: str  # "#blocked1", "" for a scalar
    layout: BlockedLayout | None  # None when scalar or not a (slice of a) blocked layout
    text: str  # the TTGIR line


@dataclass
class KernelIR:
    name: str
    num_warps: int
    ops: list[MemOp] = field(default_factory=list)
    layouts: dict[str, str] = field(default_factory=dict)  # name -> definition, unsupported ones included


def _ints(s: str) -> tuple[int, ...]:
    return tuple(int(x) for x in s.replace(" ", "").split(",") if x)


def _resolve(loc: str, table: dict[str, str], depth: int = 0) -> tuple[str, int, int] | None:
    """A loc body or `#locN` reference to (file, line, col); None for unknown."""
    if depth > 64:
        return None
    loc = loc.strip()
    if loc.startswith("#loc"):
        body = table.get(loc)
        return None if body is None else _resolve(body, table, depth + 1)
    if m := _LOC_FILE.match(loc):
        return m.group(1), int(m.group(2)), int(m.group(3))
    # "name"(#locN) | callsite(#callee at #caller) | fused[#a, #b]: the first reference is where the
    # op's own source is (the callee's line for an inlined @triton.jit helper).
    for ref in _LOC_REF.findall(loc):
        if (got := _resolve(ref, table, depth + 1)) is not None:
            return got
    return None


def parse_ttgir(ttgir: str) -> KernelIR:
    lines = ttgir.splitlines()
    blocked: dict[str, BlockedLayout] = {}
    defs: dict[str, str] = {}
    locs: dict[str, str] = {}
    for ln in lines:
        if m := _BLOCKED.match(ln):
            f = {k: _ints(v) for k, v in _FIELD.findall(m.group(2))}
            blocked[m.group(1)] = BlockedLayout(f["sizePerThread"], f["threadsPerWarp"], f["warpsPerCTA"],
                                                f["order"])
            defs[m.group(1)] = ln
        elif ln.startswith("#") and " = #ttg." in ln:
            defs[ln.split(" = ", 1)[0]] = ln
        if m := _LOC_DEF.match(ln):
            locs[m.group(1)] = m.group(2)
    for ln in lines:  # slices after their parents are known
        if (m := _SLICE.match(ln)) and m.group(3) in blocked:
            p = blocked[m.group(3)]
            blocked[m.group(1)] = BlockedLayout(p.size_per_thread, p.threads_per_warp, p.warps_per_cta, p.order,
                                                sliced_dim=int(m.group(2)))
    nw = _NUM_WARPS.search(ttgir)
    fn = _FUNC.search(ttgir)
    ir = KernelIR(name=fn.group(1) if fn else "", num_warps=int(nw.group(1)) if nw else 4, layouts=defs)
    for ln in lines:
        s = ln.strip()
        kind = next((k for prefix, k in _MEMOPS if prefix in s), None)
        if kind is None:
            continue
        lm = _OP_LOC.search(s)
        where = _resolve(lm.group(1), locs) if lm else None
        if where is None:
            continue
        type_part = s.rsplit(" : ", 1)[-1]
        if m := _PTR_TENSOR.search(type_part):
            shape = tuple(int(x) for x in m.group(1).split("x") if x)
            elem, lname = m.group(2), m.group(3) or ""
        elif m := _PTR_SCALAR.search(type_part):
            shape, elem, lname = (), m.group(1), ""
        else:
            continue
        bits = _ELEM_BITS.get(elem, 32)
        layout = blocked.get(lname)
        if (sm := _INLINE_SLICE.match(lname)) and sm.group(2) in blocked:
            p = blocked[sm.group(2)]
            layout = BlockedLayout(p.size_per_thread, p.threads_per_warp, p.warps_per_cta, p.order,
                                   sliced_dim=int(sm.group(1)))
        ir.ops.append(MemOp(kind=kind, file=where[0], line=where[1], col=where[2], shape=shape, elem_type=elem,
                            elem_bytes=max(1, bits // 8), layout_name=lname, layout=layout, text=s))
    return ir
