"""`decompose(artifacts, facts) -> Decomposition`: the decomposer's one entry point (pure, no I/O).

TTGIR -> typed nodes with hardware mapping and source lines; global accesses -> address analysis and
dataflow paths; SASS/ptxas text -> per-line correlation and resources; all of it -> evidence -> pattern
findings (most important first), roofline, and the compact summary for prompts.
"""

from __future__ import annotations

from services.decomposer import evidence as evm
from services.decomposer import hardware, roofline, summary
from services.decomposer.native import decompose_native
from services.decomposer.patterns import match, unchecked
from services.decomposer.ptx_lanes import PtxKernel, parse_ptx
from services.decomposer.sass import parse_ptxas, parse_sass, per_line
from shared.parsers.ttgir import Module, Op, parse_ttgir, resolve_layout, value_type
from shared.tokens import TOKEN_RULE
from shared.tools.decompose import (
    Artifacts,
    DataflowPath,
    DataflowStep,
    Decomposition,
    LayoutInfo,
    Location,
    MemorySpace,
    Node,
    TaskFacts,
)

_PATH_OPS: dict[str, MemorySpace] = {
    "tt.load": "global",
    "ttg.async_copy_global_to_local": "global",
    "tt.descriptor_load": "global",
    "ttng.async_tma_copy_global_to_local": "global",
    "ttg.local_alloc": "shared",
    "ttg.local_load": "shared",
    "ttg.local_store": "shared",
    "ttg.memdesc_index": "shared",
    "ttg.memdesc_trans": "shared",
    "ttg.convert_layout": "register",
    "tt.dot": "tensor_core",
    "ttng.warp_group_dot": "tensor_core",
    "tt.reduce": "register",
    "tt.store": "global",
    "tt.atomic_rmw": "global",
    "tt.descriptor_store": "global",
}


def _node(mod: Module, op: Op, tables: dict[str, LayoutInfo], dots: dict[int, evm.Dot]) -> Node:
    t = op.result_type
    if t is None and op.operands and op.name in ("tt.store", "tt.atomic_rmw", "ttg.local_store"):
        t = value_type(mod, op.operands[0])
    dtype = (t.pointee or t.elem) if t is not None else ""
    shape = list(t.shape) if t is not None else []
    layout = t.layout if t is not None else ""
    base, _ = resolve_layout(layout, tables) if layout else (None, None)
    if op.id in dots:
        d = dots[op.id]
        dtype, shape = d.a_dtype, [d.m, d.n, d.k]
    kind, unit = hardware.classify(op.name, dtype, base)
    if op.name in ("tt.dot",) and op.id in dots and dots[op.id].tensor_cores:
        kind = "tensor"
    return Node(
        id=op.id,
        op=op.name,
        kind=kind,
        unit=unit,
        result=op.results[0] if op.results else "",
        dtype=dtype,
        shape=shape,
        layout=layout if len(layout) < 60 else layout[:57] + "...",
        loc=Location(file=op.loc.file, line=op.loc.line, col=op.loc.col) if op.loc else None,
        loop_depth=len(op.loops),
        loop=op.loops[-1] if op.loops else None,
    )


def _users(mod: Module) -> dict[str, list[Op]]:
    out: dict[str, list[Op]] = {}
    for op in mod.ops:
        for v in op.operands:
            out.setdefault(v, []).append(op)
            if "#" in v:
                out.setdefault(v.split("#")[0], []).append(op)
    # loop block args: uses of the arg are uses of the init value
    for arg, init in mod.iter_init.items():
        out.setdefault(init, []).extend(out.get(arg, []))
    return out


def _paths(mod: Module, ev: evm.Evidence) -> list[DataflowPath]:
    users = _users(mod)
    by_op = {a.op.id: a for a in ev.accesses}
    paths: list[DataflowPath] = []
    for a in ev.accesses:
        if a.kind not in ("load", "async_copy"):
            continue
        start = a.op
        seeds: list[str] = list(start.results)
        steps: list[DataflowStep] = []
        if a.kind == "async_copy" and len(start.operands) > 1:
            root = start.operands[1]
            d = mod.ops[mod.by_result[root]] if root in mod.by_result else None
            while d is not None and d.name == "ttg.memdesc_index" and d.operands:
                root = d.operands[0]
                d = mod.ops[mod.by_result[root]] if root in mod.by_result else None
            if d is not None and d.name == "ttg.local_alloc":
                steps.append(
                    DataflowStep(
                        node=d.id,
                        op=d.name,
                        space="shared",
                        layout=d.result_type.layout if d.result_type else "",
                        line=d.loc.line if d.loc else None,
                    )
                )
            seeds = [root]
        steps.append(
            DataflowStep(
                node=start.id,
                op=start.name,
                space="global",
                layout=a.layout,
                vector_bytes=a.vec_bytes,
                contiguous=a.cls == "contiguous",
                line=a.line,
            )
        )
        seen = {start.id}
        todo = list(seeds)
        compute_added = False
        while todo and len(seen) < 80:
            v = todo.pop(0)
            for u in users.get(v, []):
                if u.id in seen or u.name in (
                    "scf.yield",
                    "ttg.async_commit_group",
                    "ttg.async_wait",
                    "ttng.warp_group_dot_wait",
                    "ttg.local_dealloc",
                ):
                    continue
                seen.add(u.id)
                space = _PATH_OPS.get(u.name)
                if u.name == "ttg.async_copy_global_to_local":
                    continue
                if space is None and not compute_added and u.name.startswith(("arith.", "math.")):
                    space, compute_added = "register", True
                if space == "shared" and u.name == "ttg.memdesc_index" and any(s.op == u.name for s in steps):
                    space = None
                if space is not None:
                    if (
                        space == "tensor_core"
                        and u.name == "tt.dot"
                        and not any(d.tensor_cores for d in ev.dots if d.op.id == u.id)
                    ):
                        space = "register"
                    acc_ = by_op.get(u.id)
                    steps.append(
                        DataflowStep(
                            node=u.id,
                            op=u.name,
                            space=space,
                            layout=(u.result_type.layout if u.result_type else (acc_.layout if acc_ else "")),
                            vector_bytes=acc_.vec_bytes if acc_ else None,
                            contiguous=(acc_.cls == "contiguous") if acc_ else None,
                            line=u.loc.line if u.loc else None,
                        )
                    )
                if u.name in ("tt.store", "tt.atomic_rmw"):
                    continue
                todo.extend(u.results)
        steps.sort(key=lambda s: s.node)
        loop = start.loops[-1] if start.loops else None
        paths.append(
            DataflowPath(
                tensor=(
                    start.loc.name
                    if start.loc and start.loc.name
                    else (start.results[0] if start.results else f"op{start.id}")
                ),
                steps=steps,
                loop=loop,
                loop_line=mod.ops[loop].loc.line if loop is not None and mod.ops[loop].loc else None,
            )
        )
    return paths


def _extras(ev: evm.Evidence) -> dict[int, str]:
    out: dict[int, str] = {}
    for a in ev.accesses:
        tag = f" {a.vec_bytes}B/thr" if a.cls == "contiguous" else f" {a.cls}"
        bits = f" LDG/STG {sorted(set(a.sass_bits))}b" if a.sass_bits else ""
        out[a.op.id] = tag + bits
    for lp in ev.loops:
        if lp.async_copies or lp.tma:
            out[lp.op.id] = f" pipelined ({lp.async_copies} cp.async, {lp.tma} TMA)"
        elif lp.sync_loads:
            out[lp.op.id] = f" {len(lp.sync_loads)} sync loads"
    for d in ev.dots:
        if d.precision and d.a_dtype == "f32":
            out[d.op.id] = f" {d.precision}"
    return out


def decompose(artifacts: Artifacts, facts: TaskFacts | None = None) -> Decomposition:
    """Decompose one compiled kernel. Raises shared.parsers.ttgir.TtgirError (a ValueError) on text that is
    not TTGIR; with no TTGIR but PTX (a CUDA C++ kernel) it decomposes PTX/SASS/ptxas (native.py)."""
    f = facts or TaskFacts()
    if not artifacts.ttgir.strip() and artifacts.ptx.strip():
        return decompose_native(artifacts, f)  # CUDA C++: no TTGIR, PTX/SASS/ptxas only
    mod = parse_ttgir(artifacts.ttgir, artifacts.kernel)
    warnings = list(mod.warnings)
    sass = parse_sass(artifacts.sass, mod.func) if artifacts.sass.strip() else None
    if sass is None:
        warnings.append(
            "no SASS given: SASS correlation skipped (pass the sass tool's text: include_text=True)"
        )
    elif not sass.has_line_info:
        warnings.append(
            "SASS has no line info (cuobjdump text): per-line correlation skipped; use "
            "nvdisasm --print-line-info"
        )
    sass_lines = per_line(sass) if sass is not None and sass.has_line_info else []
    ptxas = parse_ptxas(artifacts.ptxas_info, mod.func) if artifacts.ptxas_info.strip() else None
    if ptxas is None:
        warnings.append("no ptxas -v info: registers and spills unknown")
    ptx: PtxKernel | None = None
    if artifacts.ptx.strip():
        try:
            ptx = parse_ptx(artifacts.ptx, mod.func)
        except ValueError as e:
            warnings.append(f"PTX not read ({e}): static divergence unchecked")
    ev = evm.build(mod, f, sass, sass_lines, ptxas, artifacts.shared_bytes, artifacts.num_stages, ptx)
    dots = {d.op.id: d for d in ev.dots}
    nodes = [_node(mod, op, ev.layouts, dots) for op in mod.ops]
    findings = match(ev)
    tc = any(d.tensor_cores for d in ev.dots)
    roof = roofline.classify(
        f.flops, f.bytes_moved, f.measured_s, f.dtype or (ev.dots[0].a_dtype if ev.dots else ""), tc, f.device
    )
    header = []
    if ptxas is not None:
        header.append(
            f"ptxas: {ptxas.registers} regs, spills {ptxas.spill_stores}/{ptxas.spill_loads} B, "
            f"smem {ev.shared_bytes} B" + (" (est.)" if ev.shared_estimated else "")
        )
    if ev.theoretical_occupancy is not None:
        header.append(
            f"occupancy: {ev.blocks_per_sm} blocks/SM ({100 * ev.theoretical_occupancy:.0f} %), "
            f"limit {ev.occupancy_limiter}"
            + (f", grid {ev.programs} = {ev.waves:.2f} waves" if ev.waves is not None else "")
        )
    text, ntok = summary.build(
        mod.func, mod.target, mod.num_warps, nodes, _extras(ev), findings, roof, header
    )
    return Decomposition(
        kernel=mod.func,
        target=mod.target,
        num_warps=mod.num_warps,
        nodes=nodes,
        layouts=list(ev.layouts.values()),
        paths=_paths(mod, ev),
        sass_lines=sass_lines,
        ptxas=ptxas,
        roofline=roof,
        findings=findings,
        summary=text,
        summary_tokens=ntok,
        token_rule=TOKEN_RULE,
        warnings=warnings,
        unchecked=unchecked(ev),
    )
