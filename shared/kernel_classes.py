"""Kernel classes and the importance order of state triples per class.

One home for telemetry (compact state rendering, detector hints) and the planner (its context's state
section): DESIGN.md, "One job", step 2 orders state triples by importance for the kernel class, and both
services must agree on that order. Pure; no service imports.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal, get_args

from shared.messages import Resource, StateTriple

KernelClass = Literal["attention", "gemm", "reduction", "elementwise", "unknown"]
RESOURCES: tuple[Resource, ...] = get_args(Resource)

# What a planner should read first. GEMM and attention live on the tensor pipe (GPU.md: a plain Triton
# matmul reaches 89 TFLOP/s at 32x32x32 and 688 at 128x256x64, the tensor pipe makes the difference);
# reductions and elementwise kernels live on DRAM bandwidth (naive Triton add reaches 4.3 of 4.35 TB/s).
IMPORTANCE: dict[KernelClass, tuple[Resource, ...]] = {
    "gemm": (
        "tensor_core_util",
        "tc_occupancy",
        "sm_active",
        "occupancy",
        "reg_pressure",
        "shared_mem_util",
        "l2_hit_rate",
        "l2_bandwidth",
        "dram_bandwidth",
        "inst_issue_stall",
        "sm_clock",
        "power",
    ),
    "attention": (
        "tensor_core_util",
        "tc_occupancy",
        "shared_mem_util",
        "sm_active",
        "occupancy",
        "reg_pressure",
        "dram_bandwidth",
        "l2_hit_rate",
        "l2_bandwidth",
        "inst_issue_stall",
        "sm_clock",
        "power",
    ),
    "reduction": (
        "dram_bandwidth",
        "l2_bandwidth",
        "l2_hit_rate",
        "occupancy",
        "sm_active",
        "warp_divergence",
        "shared_mem_util",
        "inst_issue_stall",
        "gmem_coalescing",
        "sm_clock",
    ),
    "elementwise": (
        "dram_bandwidth",
        "gmem_coalescing",
        "l2_bandwidth",
        "l2_hit_rate",
        "l1_cache_hit",
        "sm_active",
        "occupancy",
        "inst_issue_stall",
        "sm_clock",
    ),
    "unknown": ("sm_active", "gpu_util", "tensor_core_util", "dram_bandwidth", "occupancy", "sm_clock"),
}
TIME_ORDER: dict[str, int] = {"current": 0, "anomaly_score": 1, "delta_15s": 2, "delta_1m": 3, "trend_5m": 4}

# Name patterns, first match wins (attention before gemm: flash-attention kernels contain "matmul"-like
# parts; reduction before elementwise: "softmax" and "layernorm" reduce along a row).
CLASS_PATTERNS: tuple[tuple[KernelClass, re.Pattern[str]], ...] = (
    ("attention", re.compile(r"attn|attention|flash|sdpa|fmha|mha\b", re.IGNORECASE)),
    ("gemm", re.compile(r"matmul|gemm|\bmm\b|_mm_|bmm|conv|dot|linear", re.IGNORECASE)),
    (
        "reduction",
        re.compile(r"reduc|sum|mean|softmax|norm|argmax|max_|min_|cumsum|scan|histogram", re.IGNORECASE),
    ),
    (
        "elementwise",
        re.compile(
            r"add|mul|copy|relu|gelu|silu|swiglu|elementwise|cast|fill|transpose|bias|"
            r"dropout|scale",
            re.IGNORECASE,
        ),
    ),
)


def classify_kernel(name: str) -> KernelClass:
    """A kernel class from its name; "unknown" when nothing matches (the task file can say better)."""
    for cls, pat in CLASS_PATTERNS:
        if pat.search(name):
            return cls
    return "unknown"


def order_triples(triples: Iterable[StateTriple], kernel_class: KernelClass) -> list[StateTriple]:
    """Triples sorted by the class's importance, then time axis (current first), then space (global
    first). Resources the class does not list keep their Resource-literal order after the listed ones."""
    rank = {r: i for i, r in enumerate(IMPORTANCE[kernel_class])}
    base = len(rank)
    pos = {r: i for i, r in enumerate(RESOURCES)}

    def key(t: StateTriple) -> tuple[int, int, int, str, str]:
        return (
            rank.get(t.resource, base + pos[t.resource]),
            TIME_ORDER[t.time],
            0 if t.space == "global_avg" else 1,
            t.space,
            t.source,
        )

    return sorted(triples, key=key)
