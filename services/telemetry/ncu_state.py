"""Per-kernel state from an `ncu_profile` record: its figures as StateTriples, its gaps as AbsentDimensions.

The toolrunner's ncu_profile (shared/tools/profile.py) already maps ncu's metrics onto GPU.md's state
dimensions ("Where each state dimension comes from", ncu column); this module only puts them on the
state-vector axes: time "current" (one profiled launch), space "kernel:<name>", source "ncu:<metric>".
A dimension of that ncu column with no figure in the record is absent with the record's reasons, never 0.
Pure: no I/O.

    out = ncu_output(tool_result.result)           # the ToolResult's dict, validated
    vector = kernel_vector(out, node="n0", gpu="cuda:0", source="telemetry")
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from shared.messages import AbsentDimension, Resource, StateTriple, StateVector
from shared.tools.profile import NcuKernelProfile, NcuProfileOutput

# GPU.md's dimensions with an ncu (per-kernel) source; each one the record lacks is reported absent.
# dram_bandwidth and occupancy figures, which ncu_profile also gives, become triples but are not required.
NCU_DIMENSIONS: tuple[Resource, ...] = (
    "sm_active", "l2_bandwidth", "tc_occupancy", "gmem_coalescing", "warp_divergence", "reg_pressure",
    "shared_mem_util", "tensor_core_util", "pcie_bw", "nvlink_bw", "l1_cache_hit", "inst_issue_stall",
)

# ncu auto-scales byte units with decimal prefixes: the H200 vector_add fixture (two 2^26-element fp32
# inputs, 536,870,912 B) reads dram__bytes_read.sum = 536.87552 "Mbyte", so M is 1e6 (2^20 would give 512).
# Triples on the bus carry one unit per quantity, so a 3.79 "Tbyte/s" and a 119 "Gbyte/s" L2 figure compare
# as GB/s (the unit the NVML and DCGM samplers use for bandwidth) and volumes as bytes.
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BYTES = re.compile(r"^([KMGTP]?)byte(/s)?$")


class NcuRecordError(ValueError):
    """The tool's result is not an NcuProfileOutput (a runner of another version?)."""


def ncu_output(result: dict[str, Any]) -> NcuProfileOutput:
    try:
        return msgspec.convert(result, NcuProfileOutput)
    except msgspec.ValidationError as e:
        raise NcuRecordError(f"ncu_profile result is not an NcuProfileOutput ({e}); "
                             f"update the toolrunner and telemetry to the same shared/tools/profile.py") from e


def normalize(value: float, unit: str) -> tuple[float, str]:
    """ncu's value and unit in the bus's units: "%" -> pct, <prefix>byte/s -> GB/s, <prefix>byte -> B."""
    if unit == "%":
        return value, "pct"
    m = _BYTES.match(unit)
    if m is None:
        return value, unit  # sector/request, inst/warp, register/thread, fraction, ...: kept as ncu says
    scale = _PREFIX[m.group(1)]
    return (value * scale / 1e9, "GB/s") if m.group(2) else (value * scale, "B")


def kernel_space(kernel: str) -> str:
    return f"kernel:{kernel}"


def profile_triples(p: NcuKernelProfile) -> list[StateTriple]:
    space, out = kernel_space(p.kernel), []
    for v in p.values:
        value, unit = normalize(v.value, v.unit)
        source = v.source if v.source.startswith("ncu:") else f"ncu:{v.source}"
        out.append(StateTriple(v.resource, "current", space, value, unit, source))
    return out


def profile_absent(p: NcuKernelProfile) -> list[AbsentDimension]:
    """Every NCU_DIMENSIONS entry without a figure, with the record's reasons for its figures.

    A dimension with some figures present is not absent: the record's per-figure gaps inside it (a shared
    conflict rate of a kernel with no shared loads) stay in the ncu_profile record.
    """
    present = {v.resource for v in p.values}
    out = []
    for dim in NCU_DIMENSIONS:
        if dim in present:
            continue
        reasons = [f"{a.name}: {a.reason}" for a in p.absent if a.resource == dim]
        out.append(AbsentDimension(dim, "; ".join(reasons) or
                                   f"ncu_profile gave no {dim} figure for kernel {p.kernel}"))
    return out


def kernel_vector(out: NcuProfileOutput, *, node: str, gpu: str, source: str, job_id: str | None = None,
                  causation_id: str | None = None) -> StateVector:
    """One profiled launch as a StateVector. period_s is 0: a snapshot on request, not a periodic series."""
    p = out.profile
    return StateVector(source=source, node=node, gpu=gpu, period_s=0.0, triples=profile_triples(p),
                       absent=profile_absent(p), gpu_name=p.device or out.provenance.device,
                       job_id=job_id, causation_id=causation_id)
