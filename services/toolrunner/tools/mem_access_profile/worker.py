"""Worker: the two halves of mem_access_profile, one per sandboxed process.

phase "compile" (a normal process): run the task's `launch` with `JITFunction.run` replaced by a compile
for cuda:90 with the same specialisation the JIT would use (Triton's own binder), so every launch yields
its TTGIR and PTX without a GPU.

phase "trace" (TRITON_INTERPRET=1): run `launch` again in Triton's interpreter with its builder's memory
ops wrapped. In Triton 3.6.0 (triton/runtime/interpreter.py) every pointer load and store ends in
`InterpreterBuilder.create_masked_load(ptrs, mask, other, ...)` / `create_masked_store(ptrs, value,
mask, ...)` (create_load, create_store and the block-pointer variants call them through `self`), with
`ptrs.data` a numpy array of byte addresses; the grid loop calls `set_grid_dim` once per launch and
`set_grid_idx` per program. The wrappers hand each access, with the kernel frame's source line, to
services/toolrunner/tools/mem_access_profile/coalescing.py, which counts warp requests and sectors under the TTGIR layout.
"""

from __future__ import annotations

import itertools
import linecache
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec

from services.toolrunner.worker_lib.io import read_request, write_result
from shared.messages import Scalar
from shared.tools.memaccess import KernelMemProfile, MemInstruction

TARGET = ("cuda", 90, 32)  # H200: sm_90, 32 lanes per warp


class MemAccessWorkerInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    phase: Literal["compile", "trace"]
    task_path: str
    config: dict[str, Scalar]
    shape: dict[str, Scalar]
    seed: int
    kernel: str | None = None
    max_programs: int = 256
    launches: list[CompiledLaunch] = []  # trace phase: what the compile phase returned


class CompiledLaunch(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kernel: str
    ttgir: str
    ptx: str


class CompileResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    launches: list[CompiledLaunch]


class TraceResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kernels: list[KernelMemProfile]
    notes: list[str] = []


def _runtime(req: MemAccessWorkerInput) -> tuple[Any, Any]:
    from services.toolrunner.task_runtime import import_task, runtime_for

    rt = runtime_for(import_task(req.task_path))
    return rt, rt.make_inputs(dict(req.shape), req.seed, "cpu")


def compile_phase(req: MemAccessWorkerInput) -> CompileResult:
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile, make_backend
    from triton.runtime.jit import JITFunction, create_function_from_signature

    target = GPUTarget(*TARGET)
    backend = make_backend(target)
    launches: list[CompiledLaunch] = []

    def compile_instead(self: JITFunction, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> None:
        # The same steps as JITFunction.run up to the compile, with our target in place of the driver's.
        kwargs["debug"] = kwargs.get("debug", self.debug) or knobs.runtime.debug
        kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode
        binder = create_function_from_signature(self.signature, self.params, backend)
        bound, specialization, options = binder(*args, **kwargs)
        options, signature, constexprs, attrs = self._pack_args(backend, kwargs, bound, specialization, options)
        kernel = compile(ASTSource(self, signature, constexprs, attrs), target=target, options=options.__dict__)
        launches.append(CompiledLaunch(kernel=self.__name__, ttgir=kernel.asm["ttgir"], ptx=kernel.asm["ptx"]))

    JITFunction.run = compile_instead  # type: ignore[method-assign]
    rt, inputs = _runtime(req)
    rt.launch(inputs, **req.config)
    return CompileResult(launches=launches)


# ---------------------------------------------------------------- trace phase


@dataclass
class _Site:
    """One memory call site (a tl.load / tl.store in the kernel source) within one launch."""

    kind: str
    file: str
    line: int
    last_line: int  # a multi-line call ends here
    op: Any  # shared.parsers.ttgir_memops.MemOp or None
    plan: Any  # coalescing.LanePlan or None
    vector_bytes: int
    vector_source: str
    layout_text: str
    tally: Any
    note: str = ""


@dataclass
class _Launch:
    index: int
    kernel: str
    ir: Any  # shared.parsers.ttgir_memops.KernelIR
    widths: dict[tuple[str, int, int], int]
    grid: tuple[int, int, int] = (1, 1, 1)
    sample: frozenset[int] = frozenset()
    sites: dict[tuple[str, int, str], _Site] = field(default_factory=dict)  # (file, bytecode offset, kind)
    claimed: set[tuple[int, int]] = field(default_factory=set)  # TTGIR ops (line, col) given to a site


def _sample(total: int, k: int) -> frozenset[int]:
    if total <= k:
        return frozenset(range(total))
    if k <= 1:
        return frozenset({total - 1})
    return frozenset(round(i * (total - 1) / (k - 1)) for i in range(k))


_GROUP = {"load": ("load", "async_copy"), "store": ("store",), "atomic": ("atomic",)}


Span = tuple[int, int, int, int]  # first line, last line, first column, end column of a call expression


def _inside(op: Any, span: Span) -> bool:
    l0, l1, c0, c1 = span
    return (op.line > l0 or (op.line == l0 and op.col >= c0)) and (op.line < l1 or (op.line == l1 and op.col <= c1))


def _make_site(launch: _Launch, kind: str, file: str, span: Span) -> _Site:
    from services.toolrunner.tools.mem_access_profile.coalescing import AccessTally, lane_plan, scalar_plan

    line = span[0]
    # TTGIR puts an op at one of its call's arguments (a line inside a multi-line call), so match the ops
    # inside the span of the interpreter's call expression; pipelining may copy an op (same line:col).
    unique: dict[tuple[int, int], Any] = {}
    for op in launch.ir.ops:
        if op.file == file and op.kind in _GROUP[kind] and _inside(op, span):
            unique.setdefault((op.line, op.col), op)
    free = [op for key, op in sorted(unique.items()) if key not in launch.claimed]
    ops = free or list(unique.values())
    site = _Site(kind=kind, file=file, line=line, last_line=span[1], op=None, plan=None, vector_bytes=0, vector_source="",
                 layout_text="", tally=AccessTally())
    if not ops:
        site.note = f"no {kind} in the TTGIR for lines {span[0]}-{span[1]} (optimised away?): not profiled"
        return site
    # A load nested in another's arguments runs (and claims its op) first; the outer one takes the rest.
    op = site.op = ops[0]
    launch.claimed.add((op.line, op.col))
    nw = launch.ir.num_warps
    ptx_bytes = launch.widths.get((op.file, op.line, op.col))
    is_store = kind != "load"
    if not op.shape:
        site.plan = scalar_plan(nw, is_store)
        site.vector_bytes, site.vector_source, site.layout_text = op.elem_bytes, "scalar", "scalar pointer"
        return site
    if op.layout is None:
        site.layout_text = f"{op.layout_name} (not a blocked layout: not profiled)"
        site.note = launch.ir.layouts.get(op.layout_name, "")
        return site
    lay = op.layout
    o0 = lay.order[0]
    limit = 1 if lay.sliced_dim == o0 else lay.size_per_thread[o0]
    if ptx_bytes:
        vec, site.vector_source = max(1, ptx_bytes // op.elem_bytes), "ptx"
    else:  # widest access the layout allows, capped at 16 B per lane (LDG.128)
        vec, site.vector_source = max(1, min(limit, 16 // op.elem_bytes)), "layout"
    vec = math.gcd(vec, limit)
    site.vector_bytes = vec * op.elem_bytes
    site.layout_text = lay.text()
    try:
        site.plan = lane_plan(lay, op.shape, nw, vec, is_store)
    except ValueError as e:
        site.note = f"{e}: not profiled"
    return site


class _Tracer:
    def __init__(self, launches: list[CompiledLaunch], only: str | None, max_programs: int) -> None:
        from shared.parsers.ptx import ptx_access_bytes
        from shared.parsers.ttgir_memops import memory_ops

        self.compiled = [(c.kernel, memory_ops(c.ttgir), ptx_access_bytes(c.ptx)) for c in launches]
        self.only = only
        self.max_programs = max_programs
        self.launches: list[_Launch] = []
        self.current: _Launch | None = None
        self.active = False  # the current program is in the sample
        self.notes: list[str] = []
        import triton

        self.skip = (str(Path(triton.__file__).resolve().parent), str(Path(__file__).resolve()))

    def start_launch(self, name: str) -> None:
        i = len(self.launches)
        if i >= len(self.compiled) or self.compiled[i][0] != name:
            raise RuntimeError(f"launch {i} runs {name} in the interpreter but the compile phase saw "
                               f"{[c[0] for c in self.compiled]}: launch() must be deterministic")
        _, ir, widths = self.compiled[i]
        launch = _Launch(index=i, kernel=name, ir=ir, widths=widths)
        self.launches.append(launch)
        self.current = launch if self.only in (None, name) else None

    def set_grid(self, nx: int, ny: int, nz: int) -> None:
        if self.current is not None:
            self.current.grid = (nx, ny, nz)
            self.current.sample = _sample(nx * ny * nz, self.max_programs)

    def set_program(self, x: int, y: int, z: int) -> None:
        c = self.current
        self.active = c is not None and (x + c.grid[0] * (y + c.grid[1] * z)) in c.sample

    def _where(self) -> tuple[str, int, Span]:
        """The kernel frame's file, bytecode offset and the source span of the call executing there."""
        f = sys._getframe(2)
        while f is not None:
            name = f.f_code.co_filename
            fn = "" if name.startswith("<") else str(Path(name).resolve())
            if fn and not fn.startswith(self.skip):
                pos = next(itertools.islice(f.f_code.co_positions(), f.f_lasti // 2, None), None)
                if pos is None or None in pos:
                    return fn, f.f_lasti, (f.f_lineno, f.f_lineno, 0, 1 << 30)
                return fn, f.f_lasti, (pos[0], pos[1], pos[2], pos[3])  # type: ignore[return-value]
            f = f.f_back
        return "", 0, (0, 0, 0, 0)

    def record(self, kind: str, ptrs: Any, mask: Any) -> None:
        if not self.active or self.current is None:
            return
        import numpy as np

        from services.toolrunner.tools.mem_access_profile.coalescing import tally

        c = self.current
        file, lasti, span = self._where()
        site = c.sites.get((file, lasti, kind))
        if site is None:
            site = c.sites[(file, lasti, kind)] = _make_site(c, kind, file, span)
        if site.plan is None:
            return
        addr = np.asarray(ptrs.data, dtype=np.uint64)
        m = np.broadcast_to(np.asarray(mask.data, dtype=bool), addr.shape) if mask is not None else \
            np.ones(addr.shape, dtype=bool)
        n_expected = math.prod(site.op.shape) if site.op.shape else 1
        if addr.size != n_expected:
            site.note = f"the interpreter's pointer tensor has {addr.size} elements, TTGIR {n_expected}"
            site.plan = None
            return
        site.tally.add(tally(site.plan, addr, m, site.op.elem_bytes))

    def profiles(self) -> list[KernelMemProfile]:
        out = []
        for c in self.launches:
            if self.only not in (None, c.kernel):
                continue
            instrs = [_instruction(s) for s in c.sites.values()]
            instrs.sort(key=lambda i: (i.file, i.line, i.column, i.kind))
            lr, ls = _total(instrs, "load", "requests"), _total(instrs, "load", "sectors")
            sr, ss = _total(instrs, "store", "requests"), _total(instrs, "store", "sectors")
            out.append(KernelMemProfile(
                kernel=c.kernel, launch_index=c.index, grid=list(c.grid), num_warps=c.ir.num_warps,
                programs_total=math.prod(c.grid), programs_analysed=len(c.sample), instructions=instrs,
                load_requests=lr, load_sectors=ls, store_requests=sr, store_sectors=ss,
                load_sectors_per_request=ls / lr if lr else None,
                store_sectors_per_request=ss / sr if sr else None))
        return out


def _total(instrs: list[MemInstruction], kind: str, what: str) -> int:
    return sum(getattr(i, what) for i in instrs if i.kind == kind)


def _instruction(s: _Site) -> MemInstruction:
    t = s.tally
    op = s.op
    return MemInstruction(
        kind=op.kind if op is not None else s.kind, file=s.file, line=s.line, column=op.col if op else 0,
        source=" ".join(linecache.getline(s.file, n).strip() for n in range(s.line, s.last_line + 1)), dtype=op.elem_type if op else "",
        elem_bytes=op.elem_bytes if op else 0, tensor_shape=list(op.shape) if op else [],
        layout=s.layout_text, vector_bytes=s.vector_bytes, vector_source=s.vector_source or "none",
        executions=t.executions, requests=t.requests, sectors=t.sectors,
        sectors_per_request=t.sectors / t.requests if t.requests else None,
        ideal_sectors_per_request=t.ideal_sectors / t.requests if t.requests else None,
        bytes_per_sector=t.bytes_requested / t.sectors if t.sectors else None,
        active_lanes_per_request=t.active_lanes / t.requests if t.requests else None, note=s.note)


def trace_phase(req: MemAccessWorkerInput) -> TraceResult:
    from triton.runtime import interpreter as interp

    tracer = _Tracer(req.launches, req.kernel, req.max_programs)
    builder = interp.interpreter_builder
    load, store = builder.create_masked_load, builder.create_masked_store
    rmw, grid_dim, grid_idx = builder.create_atomic_rmw, builder.set_grid_dim, builder.set_grid_idx
    run = interp.InterpretedFunction.run

    def masked_load(ptrs: Any, mask: Any, *rest: Any) -> Any:
        tracer.record("load", ptrs, mask)
        return load(ptrs, mask, *rest)

    def masked_store(ptrs: Any, value: Any, mask: Any, *rest: Any) -> Any:
        tracer.record("store", ptrs, mask)
        return store(ptrs, value, mask, *rest)

    def atomic_rmw(op: Any, ptr: Any, val: Any, mask: Any, *rest: Any) -> Any:
        tracer.record("atomic", ptr, mask)
        return rmw(op, ptr, val, mask, *rest)

    def set_grid_dim(nx: int, ny: int, nz: int) -> None:
        tracer.set_grid(nx, ny, nz)
        grid_dim(nx, ny, nz)

    def set_grid_idx(x: int, y: int, z: int) -> None:
        grid_idx(x, y, z)
        tracer.set_program(x, y, z)

    def traced_run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        if not warmup:
            tracer.start_launch(self.__name__)
        return run(self, *args, grid=grid, warmup=warmup, **kwargs)

    builder.create_masked_load, builder.create_masked_store = masked_load, masked_store
    builder.create_atomic_rmw = atomic_rmw
    builder.set_grid_dim, builder.set_grid_idx = set_grid_dim, set_grid_idx
    interp.InterpretedFunction.run = traced_run  # type: ignore[method-assign]
    rt, inputs = _runtime(req)
    rt.launch(inputs, **req.config)
    return TraceResult(kernels=tracer.profiles(), notes=tracer.notes)


def main() -> None:
    req = read_request(MemAccessWorkerInput)
    write_result(compile_phase(req) if req.phase == "compile" else trace_phase(req))


if __name__ == "__main__":
    main()
