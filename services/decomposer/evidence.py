"""Static (and optional dynamic) evidence about one kernel: the facts pattern predicates read.

Built once from the parsed TTGIR, SASS, ptxas info and task facts; the predicates in `patterns.py` are
small pure functions over this record.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from services.decomposer import access as acc
from services.decomposer import layouts as lay
from services.decomposer.ptx_lanes import PtxKernel
from services.decomposer.sass import Sass, access_bits
from shared.parsers.ttgir import Module, Op, decode_layouts, defining_op, resolve_layout, value_type
from shared.tools.decompose import LayoutInfo, PtxasInfo, SassLine, TaskFacts

ELEM_BYTES = {
    "f64": 8,
    "i64": 8,
    "f32": 4,
    "i32": 4,
    "f16": 2,
    "bf16": 2,
    "i16": 2,
    "i8": 1,
    "i1": 1,
    "f8E4M3FN": 1,
    "f8E5M2": 1,
    "f8E4M3FNUZ": 1,
    "f8E5M2FNUZ": 1,
}
GLOBAL_ACCESS = ("tt.load", "tt.store", "tt.atomic_rmw", "tt.atomic_cas", "ttg.async_copy_global_to_local")
# ops whose lowering ends in a CTA barrier or shared-memory round trip
BARRIER_OPS = (
    "gpu.barrier",
    "ttg.local_load",
    "ttg.local_store",
    "ttg.convert_layout",
    "tt.reduce",
    "tt.dot",
    "ttng.warp_group_dot",
    "ttg.async_wait",
)
MAX_VECTOR_BYTES = 16  # LDG.E.128: the widest global access per thread


def elem_bytes(dtype: str) -> int:
    return ELEM_BYTES.get(dtype, 4)


@dataclass
class Access:
    op: Op
    kind: str  # "load", "store", "atomic", "async_copy"
    line: int | None
    dtype: str
    shape: tuple[int, ...]
    layout: str
    fastest: int | None
    strides: tuple[acc.Stride, ...]
    flags: frozenset[str]
    arg_names: frozenset[str]
    vec_elems: int
    vec_bytes: int
    max_vec_bytes: int
    masked: bool
    mask_args: frozenset[str]
    cls: str  # contiguous, strided, uniform, indirect, irregular, transposed_flat, transposed, scalar
    sass_bits: list[int] = field(default_factory=list)
    undivisible: list[str] = field(default_factory=list)  # args feeding address/mask with no divisibility
    threads: int = 128

    @property
    def eff_vec_bytes(self) -> int:
        """Bytes per thread per access: the layout's vector, narrowed by SASS widths at the line if known."""
        if self.sass_bits:
            return min(self.vec_bytes, max(self.sass_bits) // 8)
        return self.vec_bytes

    @property
    def potential_vec_bytes(self) -> int:
        """The widest access the tile allows: min(16 B, contiguous extent, elements per thread)."""
        per_thread = max(1, math.prod(self.shape) // max(1, self.threads)) if self.shape else 1
        return min(self.max_vec_bytes, per_thread * elem_bytes(self.dtype))

    @property
    def in_loop(self) -> bool:
        return bool(self.op.loops)

    @property
    def bytes_per_program(self) -> int:
        return math.prod(self.shape) * elem_bytes(self.dtype) if self.shape else elem_bytes(self.dtype)


@dataclass
class Dot:
    op: Op
    line: int | None
    a_dtype: str
    b_dtype: str
    acc_dtype: str
    m: int
    n: int
    k: int
    tensor_cores: bool
    mma_version: int | None
    precision: str  # "ieee", "tf32", "" (default)
    upcast_from: str  # "bf16"/"f16" when operands were arith.extf'd to f32 before the dot
    instr_n: int | None


@dataclass
class Loop:
    op: Op
    line: int | None
    depth: int
    dots: list[Dot] = field(default_factory=list)
    sync_loads: list[Access] = field(default_factory=list)  # tt.load in the body
    async_copies: int = 0
    tma: int = 0
    wait_pendings: list[int] = field(default_factory=list)
    body: list[Op] = field(default_factory=list)


@dataclass
class Evidence:
    mod: Module
    layouts: dict[str, LayoutInfo]
    facts: TaskFacts
    accesses: list[Access]
    dots: list[Dot]
    loops: list[Loop]
    ptxas: PtxasInfo | None
    sass: Sass | None
    sass_lines: list[SassLine]
    shared_bytes: int | None
    shared_estimated: bool
    num_stages: int | None
    op_counts: Counter[str]
    threads: int
    blocks_per_sm: int | None
    occupancy_limiter: str
    theoretical_occupancy: float | None  # warps per SM / 64
    programs: int | None
    waves: float | None
    arch: int
    dyn: dict[str, float]
    notes: list[str] = field(default_factory=list)
    ptx: PtxKernel | None = None  # the kernel's PTX read per lane (static divergence); None = no PTX

    def ncu(self, *names: str) -> float | None:
        for n in names:
            if n in self.dyn:
                return self.dyn[n]
        return None

    def loc(self, op: Op) -> str:
        if op.loc is None:
            return ""
        return f"{short_file(op.loc.file)}:{op.loc.line}"

    def sass_at(self, line: int | None) -> SassLine | None:
        if line is None:
            return None
        for r in self.sass_lines:
            if r.line == line and (not self.mod.file or r.file == self.mod.file or not r.file):
                return r
        return None

    def sass_loc(self, line: int | None) -> list[str]:
        r = self.sass_at(line)
        return [f"sass:{r.first_addr}"] if r is not None else []


def short_file(path: str) -> str:
    return path


def _layout_of(ev_layouts: dict[str, LayoutInfo], layout: str) -> tuple[LayoutInfo | None, int | None]:
    return resolve_layout(layout, ev_layouts)


def _arg_ancestors(mod: Module, value: str, limit: int = 400) -> set[str]:
    """Function args a value depends on (transitively)."""
    names = {a.name for a in mod.args}
    seen: set[str] = set()
    out: set[str] = set()
    todo = [value]
    while todo and len(seen) < limit:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in names:
            out.add(v)
            continue
        if v in mod.iter_init:
            todo.append(mod.iter_init[v])
            continue
        op = defining_op(mod, v)
        if op is None or op.name in ("scf.for", "scf.while"):
            continue
        todo.extend(op.operands)
    return out


def _classify_access(strides: tuple[acc.Stride, ...], fastest: int | None, flags: frozenset[str]) -> str:
    if not strides:
        return "scalar"
    if all(s == 0 for s in strides):
        return "uniform"
    if "rem_scaled" in flags and "div" in flags:
        return "transposed_flat"
    f = fastest if fastest is not None and fastest < len(strides) else len(strides) - 1
    sf = strides[f]
    if sf == 1:
        return "contiguous"
    if sf == acc.IND or "loaded" in flags and sf not in (0, 1):
        return "indirect"
    if any(s == 1 for i, s in enumerate(strides) if i != f):
        return "transposed"
    if sf == 0:
        return "contiguous" if any(s == 1 for s in strides) else "uniform"
    if sf == acc.NA:
        return "irregular"
    return "strided"


def _access(mod: Module, tables: dict[str, LayoutInfo], op: Op, ctx: acc._Ctx) -> Access | None:
    if not op.operands:
        return None
    ptr = op.operands[0]
    pt = value_type(mod, ptr)
    kind = {"tt.load": "load", "tt.store": "store", "ttg.async_copy_global_to_local": "async_copy"}.get(
        op.name, "atomic"
    )
    if op.name in ("tt.atomic_rmw", "tt.atomic_cas"):
        ptr_i = next(
            (
                i
                for i, v in enumerate(op.operands)
                if (value_type(mod, v) or _NONE).elem.startswith("ptr<")
                or (value_type(mod, v) or _NONE).kind == "ptr"
            ),
            0,
        )
        ptr = op.operands[ptr_i]
        pt = value_type(mod, ptr)
    if pt is None:
        return None
    dtype = pt.pointee or (pt.elem[4:-1] if pt.elem.startswith("ptr<") else pt.elem)
    info = acc.analyze(mod, ptr, ctx)
    layout_name = pt.layout
    base, sliced = _layout_of(tables, layout_name) if layout_name else (None, None)
    rank = len(pt.shape)
    fastest = lay.fastest_dim(base, rank, sliced) if base is not None and rank else None
    if fastest is None and rank:
        fastest = rank - 1
    eb = elem_bytes(dtype)
    vec = 1
    if base is not None and fastest is not None:
        vec = lay.elems_per_thread(base, fastest, sliced)
    if op.name == "ttg.async_copy_global_to_local":
        c = op.int_attr("contiguity")
        vec = c if c else vec
    if rank and fastest is not None:
        vec = min(vec, pt.shape[fastest])
    extent = pt.shape[fastest] * eb if rank and fastest is not None else eb
    mask_args: set[str] = set()
    masked = False
    if op.name == "tt.load" and len(op.operands) >= 2:
        masked = True
        mask_args = _arg_ancestors(mod, op.operands[1])
    elif op.name == "tt.store" and len(op.operands) >= 3:
        masked = True
        mask_args = _arg_ancestors(mod, op.operands[2])
    elif op.name == "ttg.async_copy_global_to_local" and " mask " in op.text:
        masked = True
    ptr_args = _arg_ancestors(mod, ptr)
    divs = {a.name: a for a in mod.args}
    undiv = sorted(
        a
        for a in ptr_args | mask_args
        if a in divs
        and divs[a].divisibility is None
        and divs[a].type.kind in ("scalar", "ptr")
        and divs[a].type.elem not in ("i1",)
    )
    cls = _classify_access(info.strides, fastest, info.flags)
    return Access(
        op=op,
        kind=kind,
        line=op.loc.line if op.loc else None,
        dtype=dtype,
        shape=pt.shape,
        layout=layout_name,
        fastest=fastest,
        strides=info.strides,
        flags=info.flags,
        arg_names=frozenset(ptr_args),
        vec_elems=vec,
        vec_bytes=vec * eb,
        max_vec_bytes=min(MAX_VECTOR_BYTES, extent),
        masked=masked,
        mask_args=frozenset(mask_args),
        cls=cls,
        undivisible=undiv,
        threads=mod.num_warps * mod.threads_per_warp,
    )


class _NoneType:
    elem = ""
    kind = ""


_NONE = _NoneType()


def _upcast_source(mod: Module, value: str, depth: int = 0) -> str:
    """bf16/f16 when a dot operand is an arith.extf of such data (through layout/shared moves)."""
    op = defining_op(mod, value)
    if op is None or depth > 8:
        return ""
    if op.name in ("arith.extf", "tt.fp_to_fp") and op.operand_types:
        src = op.operand_types[0].elem
        return src if src in ("bf16", "f16") or src.startswith("f8") else ""
    if (
        op.name
        in (
            "ttg.convert_layout",
            "ttg.local_load",
            "ttg.local_alloc",
            "ttg.memdesc_index",
            "ttg.memdesc_trans",
            "tt.trans",
        )
        and op.operands
    ):
        return _upcast_source(mod, op.operands[0], depth + 1)
    return ""


def _dot(mod: Module, tables: dict[str, LayoutInfo], op: Op) -> Dot:
    ta = value_type(mod, op.operands[0]) if op.operands else None
    tb = value_type(mod, op.operands[1]) if len(op.operands) > 1 else None
    rt = op.result_type
    m = rt.shape[0] if rt is not None and len(rt.shape) >= 2 else 0
    n = rt.shape[-1] if rt is not None and rt.shape else 0
    k = ta.shape[-1] if ta is not None and ta.shape else 0
    base, _ = resolve_layout(rt.layout, tables) if rt is not None else (None, None)
    tc = op.name == "ttng.warp_group_dot" or (base is not None and base.kind == "nvidia_mma")
    ver = 3 if op.name == "ttng.warp_group_dot" else (base.mma_version if base is not None else None)
    prec = op.attr("inputPrecision") or ""
    prec = {"0": "tf32", "1": "tf32x3", "2": "ieee"}.get(prec.split(":")[0].strip(), prec) if prec else ""
    if not prec and "inputPrecision = ieee" in op.text:
        prec = "ieee"
    up = ""
    for v in op.operands[:2]:
        up = up or _upcast_source(mod, v)
    return Dot(
        op=op,
        line=op.loc.line if op.loc else None,
        a_dtype=ta.elem if ta else "",
        b_dtype=tb.elem if tb else "",
        acc_dtype=rt.elem if rt else "",
        m=m,
        n=n,
        k=k,
        tensor_cores=tc,
        mma_version=ver,
        precision=prec,
        upcast_from=up,
        instr_n=base.instr_shape[1] if base is not None and len(base.instr_shape) > 1 else None,
    )


def occupancy(warps: int, regs: int | None, smem: int | None, facts: TaskFacts) -> tuple[int, str]:
    """GPU.md: blocks/SM = min(64/W, 32, 4*floor(16384/roundup(R*32,256))/W, C/roundup(S+1024,128))."""
    d = facts.device
    limits = {"warps": d.max_warps_per_sm // warps, "blocks": d.max_blocks_per_sm}
    if regs:
        per_warp = ((regs * 32 + 255) // 256) * 256
        limits["registers"] = 4 * ((d.regs_per_sm // 4) // per_warp) // warps
    if smem is not None:
        limits["shared memory"] = d.smem_per_sm // (((smem + 1024) + 127) // 128 * 128)
    lim = min(limits, key=lambda k: limits[k])
    return max(limits[lim], 0), lim


def _estimate_shared(mod: Module) -> int:
    total = 0
    for op in mod.ops:
        if op.name == "ttg.local_alloc" and op.result_type is not None and op.result_type.kind == "memdesc":
            total += op.result_type.numel * elem_bytes(op.result_type.elem)
    return total


def build(
    mod: Module,
    facts: TaskFacts,
    sass: Sass | None,
    sass_lines: list[SassLine],
    ptxas: PtxasInfo | None,
    shared_bytes: int | None,
    num_stages: int | None,
    ptx: PtxKernel | None = None,
) -> Evidence:
    tables = decode_layouts(mod.layouts)
    ctx = acc.new_context(mod)
    accesses = [
        a for op in mod.ops if op.name in GLOBAL_ACCESS if (a := _access(mod, tables, op, ctx)) is not None
    ]
    by_line_ldg: dict[int, list[int]] = {}
    by_line_stg: dict[int, list[int]] = {}
    for r in sass_lines:
        if not mod.file or r.file == mod.file:
            by_line_ldg.setdefault(r.line, []).extend(r.ldg_bits)
            by_line_stg.setdefault(r.line, []).extend(r.stg_bits)
    for a in accesses:
        if a.line is not None:
            a.sass_bits = (by_line_stg if a.kind == "store" else by_line_ldg).get(a.line, [])
    dots = [_dot(mod, tables, op) for op in mod.ops if op.name in ("tt.dot", "ttng.warp_group_dot")]
    loops: list[Loop] = []
    for op in mod.ops:
        if op.name in ("scf.for", "scf.while"):
            lp = Loop(op=op, line=op.loc.line if op.loc else None, depth=len(op.loops) + 1)
            lp.body = [o for o in mod.ops if op.id in o.loops]
            lp.dots = [d for d in dots if op.id in d.op.loops]
            lp.sync_loads = [a for a in accesses if a.kind == "load" and op.id in a.op.loops]
            lp.async_copies = sum(1 for o in lp.body if o.name == "ttg.async_copy_global_to_local")
            lp.tma = sum(1 for o in lp.body if "tma" in o.name or o.name == "tt.descriptor_load")
            lp.wait_pendings = [
                o.int_attr("pendings") or 0 for o in lp.body if o.name == "ttng.warp_group_dot_wait"
            ]
            loops.append(lp)
    est = shared_bytes is None
    smem = shared_bytes if shared_bytes is not None else _estimate_shared(mod)
    regs = ptxas.registers if ptxas is not None else None
    bps, limiter = occupancy(mod.num_warps, regs, smem, facts)
    theo = bps * mod.num_warps / facts.device.max_warps_per_sm if bps else None
    programs = math.prod(facts.grid) if facts.grid else None
    waves = programs / (facts.device.sms * bps) if programs and bps else None
    dyn: dict[str, float] = {}
    if facts.dynamic is not None:
        dyn.update(facts.dynamic.nvml)
        dyn.update(facts.dynamic.ncu)
    m = re.match(r"cuda:(\d+)", mod.target)
    return Evidence(
        mod=mod,
        layouts=tables,
        facts=facts,
        accesses=accesses,
        dots=dots,
        loops=loops,
        ptxas=ptxas,
        sass=sass,
        sass_lines=sass_lines,
        shared_bytes=smem,
        shared_estimated=est,
        num_stages=num_stages,
        op_counts=Counter(o.name for o in mod.ops),
        threads=mod.num_warps * mod.threads_per_warp,
        blocks_per_sm=bps,
        occupancy_limiter=limiter,
        theoretical_occupancy=theo,
        programs=programs,
        waves=waves,
        arch=int(m.group(1)) if m else 0,
        dyn=dyn,
        ptx=ptx,
    )


def sass_bits_ok(a: Access) -> bool | None:
    """Whether SASS confirms vector accesses at the line (None: no SASS for it)."""
    if not a.sass_bits:
        return None
    return max(a.sass_bits) >= 64


__all__ = ["Access", "Dot", "Evidence", "Loop", "access_bits", "build", "elem_bytes", "occupancy"]
