"""The global memory operations of a TTGIR module: layout, source location, element type.

Every `tt.load` / `tt.store` / `ttg.async_copy_global_to_local` / atomic of `parse_ttgir`'s module with its
pointer tensor's shape, element type and (slice of a) blocked layout, at the file:line:col of the op's own
source (the callee's line for an inlined @triton.jit helper). This is what the toolrunner's
mem_access_profile matches to the interpreter's calls; how wide the compiler actually vectorised each op is
read from the PTX by shared/parsers/ptx.py `ptx_access_bytes`.
"""

from __future__ import annotations

import msgspec

from shared.parsers.ttgir import (
    Module,
    TtgirError,
    TType,
    decode_layout,
    decode_layouts,
    function_names,
    parse_ttgir,
    resolve_layout,
)
from shared.tools.decompose import LayoutInfo

_KINDS = {"tt.load": "load", "tt.store": "store", "ttg.async_copy_global_to_local": "async_copy",
          "tt.atomic_rmw": "atomic", "tt.atomic_cas": "atomic"}
_ELEM_BITS = {"f32": 32, "f16": 16, "bf16": 16, "f64": 64, "i1": 8, "i8": 8, "i16": 16, "i32": 32,
              "i64": 64, "f8E4M3FN": 8, "f8E5M2": 8, "f8E4M3FNUZ": 8, "f8E5M2FNUZ": 8}


class BlockedLayout(msgspec.Struct, frozen=True):
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


class MemOp(msgspec.Struct, frozen=True):
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


class KernelIR(msgspec.Struct):
    name: str
    num_warps: int
    ops: list[MemOp] = msgspec.field(default_factory=list)
    layouts: dict[str, str] = msgspec.field(default_factory=dict)  # name -> its `#name = #ttg...` line


def _blocked(info: LayoutInfo, sliced_dim: int | None) -> BlockedLayout:
    return BlockedLayout(tuple(info.size_per_thread), tuple(info.threads_per_warp), tuple(info.warps_per_cta),
                         tuple(info.order), sliced_dim=sliced_dim)


def _layout(name: str, mod: Module, table: dict[str, LayoutInfo]) -> BlockedLayout | None:
    """A blocked layout or a slice of a named blocked one (alias or inline); None for any other layout."""
    text = mod.layouts.get(name, name)
    kind = decode_layout(name, text).kind
    if kind == "blocked":
        return _blocked(table[name] if name in table else decode_layout(name, text), None)
    if kind == "slice":
        base, dim = resolve_layout(text, table)
        if base is not None and base.kind == "blocked":
            return _blocked(base, dim)
    return None


def _pointer(types: list[TType]) -> TType | None:
    """The op's pointer operand type: the first tensor of pointers, else the first scalar pointer."""
    return next((t for t in types if t.kind == "tensor" and t.pointee), None) or next(
        (t for t in types if t.kind == "ptr"), None)


def _function_ops(mod: Module) -> list[MemOp]:
    table = decode_layouts(mod.layouts)
    out = []
    for op in mod.ops:
        kind = _KINDS.get(op.name)
        ptr = _pointer(op.operand_types) if kind else None
        if kind is None or ptr is None or not op.locs:
            continue
        where = op.locs[0]
        elem = ptr.pointee
        out.append(MemOp(kind=kind, file=where.file, line=where.line, col=where.col, shape=ptr.shape,
                         elem_type=elem, elem_bytes=max(1, _ELEM_BITS.get(elem, 32) // 8),
                         layout_name=ptr.layout, layout=_layout(ptr.layout, mod, table) if ptr.layout else None,
                         text=op.source))
    return out


def memory_ops(ttgir: str) -> KernelIR:
    """The global memory ops of a compiled kernel's TTGIR, over every function with a body (a noinline
    helper's too), in text order; name and num_warps are the first function's. A text with no function
    has none."""
    mods = []
    for name in dict.fromkeys(function_names(ttgir)):
        try:
            mods.append(parse_ttgir(ttgir, name))
        except TtgirError:  # a declaration without a body
            continue
    if not mods:
        return KernelIR(name="", num_warps=4)
    first = mods[0]
    layouts = {k: f"{k} = {v}" for k, v in first.layouts.items() if v.startswith("#ttg.")}
    return KernelIR(name=first.func, num_warps=first.num_warps, layouts=layouts,
                    ops=[o for mod in mods for o in _function_ops(mod)])
