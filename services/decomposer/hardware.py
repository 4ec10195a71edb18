"""Which hardware unit executes each TTGIR operation, and what kind of node it is.

One table, one line per op family; `classify` adds what only the types tell (dtype of the ALU, whether a
tt.dot landed on tensor cores: an #mma result layout means mma.sync (v2) or wgmma (v3), a #blocked
result means the FMA fallback on CUDA cores).
"""

from __future__ import annotations

from shared.tools.decompose import LayoutInfo, NodeKind

# op -> (kind, unit). Float arithmetic gets its unit from the dtype in classify().
_TABLE: dict[str, tuple[NodeKind, str]] = {
    "tt.load": ("memory", "global LSU"),
    "tt.store": ("memory", "global LSU"),
    "tt.atomic_rmw": ("memory", "global atomics (L2)"),
    "tt.atomic_cas": ("memory", "global atomics (L2)"),
    "tt.descriptor_load": ("memory", "TMA"),
    "tt.descriptor_store": ("memory", "TMA"),
    "tt.descriptor_gather": ("memory", "TMA"),
    "ttng.async_tma_copy_global_to_local": ("memory", "TMA"),
    "ttng.async_tma_copy_local_to_global": ("memory", "TMA"),
    "ttg.async_copy_global_to_local": ("memory", "global->shared cp.async (LSU)"),
    "ttg.local_alloc": ("memory", "shared memory"),
    "ttg.local_load": ("memory", "shared memory"),
    "ttg.local_store": ("memory", "shared memory"),
    "ttg.local_dealloc": ("memory", "shared memory"),
    "ttg.memdesc_index": ("memory", "shared memory (address)"),
    "ttg.memdesc_subslice": ("memory", "shared memory (address)"),
    "ttg.memdesc_trans": ("memory", "shared memory (address)"),
    "ttg.memdesc_reshape": ("memory", "shared memory (address)"),
    "ttg.convert_layout": ("memory", "shared memory or warp shuffles (layout conversion)"),
    "ttng.warp_group_dot": ("tensor", "tensor core (wgmma)"),
    "ttng.warp_group_dot_wait": ("sync", "wgmma wait"),
    "ttg.async_wait": ("sync", "cp.async wait"),
    "ttg.async_commit_group": ("sync", "cp.async commit"),
    "gpu.barrier": ("sync", "CTA barrier"),
    "ttng.fence_async_shared": ("sync", "async proxy fence"),
    "ttng.init_barrier": ("sync", "mbarrier"),
    "ttng.wait_barrier": ("sync", "mbarrier"),
    "ttng.arrive_barrier": ("sync", "mbarrier"),
    "ttng.barrier_expect": ("sync", "mbarrier"),
    "ttng.inval_barrier": ("sync", "mbarrier"),
    "scf.for": ("control", "loop (branch unit)"),
    "scf.while": ("control", "loop (branch unit)"),
    "scf.if": ("control", "branch unit"),
    "scf.yield": ("control", "branch unit"),
    "scf.condition": ("control", "branch unit"),
    "tt.return": ("control", "branch unit"),
    "tt.call": ("control", "call"),
    "tt.print": ("control", "printf (device -> host)"),
    "tt.assert": ("control", "assert (trap)"),
    "tt.reduce": ("compute", "ALU + warp shuffles (+ shared memory across warps)"),
    "tt.scan": ("compute", "ALU + warp shuffles (+ shared memory across warps)"),
    "tt.histogram": ("compute", "ALU + shared atomics"),
    "tt.elementwise_inline_asm": ("compute", "inline PTX"),
    "tt.get_program_id": ("compute", "special register"),
    "tt.get_num_programs": ("compute", "special register"),
    "tt.make_range": ("compute", "INT ALU (index)"),
    "tt.splat": ("compute", "register (broadcast)"),
    "tt.broadcast": ("compute", "register (broadcast)"),
    "tt.expand_dims": ("compute", "register (view)"),
    "tt.reshape": ("compute", "register (view)"),
    "tt.trans": ("compute", "register (view)"),
    "tt.join": ("compute", "register (view)"),
    "tt.split": ("compute", "register (view)"),
    "tt.addptr": ("compute", "INT ALU (address)"),
    "arith.constant": ("compute", "constant"),
}

_SFU = {
    "math.exp",
    "math.exp2",
    "math.log",
    "math.log2",
    "math.sqrt",
    "math.rsqrt",
    "math.sin",
    "math.cos",
    "math.tanh",
    "math.erf",
    "arith.divf",
    "tt.precise_divf",
    "tt.precise_sqrt",
}
_CONVERT = {
    "arith.extf",
    "arith.truncf",
    "arith.sitofp",
    "arith.uitofp",
    "arith.fptosi",
    "arith.fptoui",
    "tt.fp_to_fp",
    "arith.bitcast",
    "tt.bitcast",
}
_INT_DIV = {"arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.ceildivsi", "arith.floordivsi"}


def float_unit(dtype: str) -> str:
    if dtype == "f64":
        return "FP64 ALU"
    if dtype in ("f16", "bf16"):
        return "FP16/BF16 ALU"
    return "FP32 ALU"


def classify(op: str, dtype: str, result_layout: LayoutInfo | None) -> tuple[NodeKind, str]:
    if op == "tt.dot":
        if result_layout is not None and result_layout.kind == "nvidia_mma":
            if result_layout.mma_version == 3:
                return "tensor", "tensor core (wgmma)"
            return "tensor", "tensor core (mma.sync)"
        return "compute", "FMA on CUDA cores (dot not on tensor cores)"
    if op in _TABLE:
        return _TABLE[op]
    if op in _SFU:
        return "compute", "SFU (MUFU) + " + float_unit(dtype)
    if op in _CONVERT:
        return "compute", "conversion (F2F/I2F)"
    if op in _INT_DIV:
        return "compute", "INT ALU (multi-instruction divide)"
    if op.startswith(("arith.", "math.")):
        if dtype.startswith("f") or dtype == "bf16":
            return "compute", float_unit(dtype)
        return "compute", "INT ALU"
    if op.startswith("cf."):
        return "control", "branch unit"
    return "compute", "unknown"
