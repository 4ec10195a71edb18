"""Parse `ncu --csv --page raw` output and map its metrics onto GPU.md's state dimensions. Pure.

The format (shared/fixtures/h200-probe/ncu_raw.csv): ncu's own "==PROF==" / "==WARNING==" lines and the
program's stdout come first; then a CSV header starting with "ID"; then one units row (empty ID); then one
row per profiled kernel launch. Numbers carry thousands separators ("1,048,576"); text cells stay text.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import msgspec

from shared.messages import Resource
from shared.tools.profile import AbsentValue, NcuKernelProfile, NcuMetric, ProfileValue

_NUMBER = re.compile(r"^[-+]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?([eE][-+]?\d+)?$")
# The identifying columns ncu prints before the metrics.
_FIXED = (
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
)


class NcuCsvError(ValueError):
    pass


def parse_number(cell: str) -> float | None:
    s = cell.strip()
    if not _NUMBER.match(s):
        return None
    return float(s.replace(",", ""))


def parse_ncu_csv(text: str, *, keep_device_attributes: bool = False) -> list[NcuKernelProfile]:
    """One NcuKernelProfile (metrics only, no dimensions yet) per kernel row, in launch order."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID",')), None)
    if start is None:
        raise NcuCsvError(
            'no CSV header (a line starting with "ID",) in the ncu output: was it run with '
            "--csv --page raw, and did it profile any kernel? (check the -k regex)"
        )
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, body = rows[0], rows[1:]
    units = [""] * len(header)
    if body and body[0] and body[0][0] == "":
        units, body = body[0], body[1:]
    out = []
    for row in body:
        if len(row) != len(header):
            continue  # a trailing line ncu or the program printed after the table
        cells = dict(zip(header, row))
        metrics = {}
        for i, name in enumerate(header):
            if name in _FIXED or (name.startswith("device__") and not keep_device_attributes):
                continue
            cell = row[i]
            metrics[name] = NcuMetric(value=parse_number(cell), unit=units[i], text=cell)
        duration = metrics.get("gpu__time_duration.sum")
        out.append(
            NcuKernelProfile(
                kernel=cells.get("Kernel Name", ""),
                device=cells.get("device__attribute_display_name", ""),
                block=cells.get("Block Size", ""),
                grid=cells.get("Grid Size", ""),
                duration_ns=_scaled_ns(duration) if duration else None,
                metrics=metrics,
            )
        )
    return out


def _scaled_ns(m: NcuMetric) -> float | None:
    """gpu__time_duration in ns whatever unit ncu chose (it prints ns, usecond or msecond)."""
    if m.value is None:
        return None
    scale = {
        "ns": 1.0,
        "nsecond": 1.0,
        "us": 1e3,
        "usecond": 1e3,
        "ms": 1e6,
        "msecond": 1e6,
        "s": 1e9,
        "second": 1e9,
    }.get(m.unit)
    return m.value * scale if scale is not None else None


# ---------------------------------------------------------------- state dimensions

Metrics = dict[str, NcuMetric]
Derived = tuple[float, str, str] | str  # (value, source, ncu unit or "") or the reason it is absent


def _one(metric: str) -> Callable[[Metrics], Derived]:
    def get(m: Metrics) -> Derived:
        v = m.get(metric)
        if v is None:
            return f"metric {metric} not in the ncu output"
        if v.value is None:
            return f"metric {metric} is not a number ({v.text!r})"
        return v.value, f"ncu:{metric}", v.unit

    return get


def _ratio(num: str, den: str, zero_means: str) -> Callable[[Metrics], Derived]:
    def get(m: Metrics) -> Derived:
        a, b = _one(num)(m), _one(den)(m)
        if isinstance(a, str):
            return a
        if isinstance(b, str):
            return b
        if b[0] == 0:
            return f"{den} = 0: {zero_means}"
        return a[0] / b[0], f"ncu:{num}/{den}", ""

    return get


@dataclass(frozen=True)
class Dimension:
    resource: Resource
    name: str
    unit: str
    get: Callable[[Metrics], Derived]


_G = "l1tex__t_{}_pipe_lsu_mem_global_op_{}.sum"
_STALLS = (
    "long_scoreboard",
    "short_scoreboard",
    "barrier",
    "mio_throttle",
    "lg_throttle",
    "math_pipe_throttle",
    "wait",
    "not_selected",
    "no_instruction",
    "dispatch_stall",
    "membar",
)

# GPU.md "Where each state dimension comes from", the ncu column; one line per figure.
DIMENSIONS: tuple[Dimension, ...] = (
    Dimension(
        "sm_active",
        "sm_active_cycles_fraction",
        "fraction",
        _ratio("sm__cycles_active.avg", "gpc__cycles_elapsed.max", "no cycles elapsed"),
    ),
    Dimension(
        "sm_active", "sm_throughput_pct", "%", _one("sm__throughput.avg.pct_of_peak_sustained_elapsed")
    ),
    Dimension("l2_bandwidth", "l2_bytes_per_second", "byte/second", _one("lts__t_bytes.sum.per_second")),
    Dimension(
        "l2_bandwidth", "l2_throughput_pct", "%", _one("lts__throughput.avg.pct_of_peak_sustained_elapsed")
    ),
    Dimension("l2_bandwidth", "l2_hit_rate_pct", "%", _one("lts__t_sector_hit_rate.pct")),
    Dimension(
        "dram_bandwidth",
        "dram_throughput_pct",
        "%",
        _one("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    ),
    Dimension("dram_bandwidth", "dram_read_bytes", "byte", _one("dram__bytes_read.sum")),
    Dimension("dram_bandwidth", "dram_write_bytes", "byte", _one("dram__bytes_write.sum")),
    Dimension(
        "tc_occupancy",
        "tensor_pipe_active_pct",
        "%",
        _one("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"),
    ),
    Dimension(
        "gmem_coalescing",
        "load_sectors_per_request",
        "sector/request",
        _ratio(_G.format("sectors", "ld"), _G.format("requests", "ld"), "no global loads"),
    ),
    Dimension(
        "gmem_coalescing",
        "store_sectors_per_request",
        "sector/request",
        _ratio(_G.format("sectors", "st"), _G.format("requests", "st"), "no global stores"),
    ),
    Dimension(
        "gmem_coalescing",
        "load_bytes_per_sector",
        "byte/sector",
        _one("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"),
    ),
    Dimension(
        "warp_divergence",
        "threads_per_instruction",
        "thread",
        _one("smsp__thread_inst_executed_per_inst_executed.ratio"),
    ),
    Dimension(
        "reg_pressure", "registers_per_thread", "register/thread", _one("launch__registers_per_thread")
    ),
    Dimension(
        "reg_pressure", "occupancy_limit_registers", "block", _one("launch__occupancy_limit_registers")
    ),
    Dimension(
        "reg_pressure", "local_load_sectors", "sector", _one("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum")
    ),
    Dimension(
        "reg_pressure", "local_store_sectors", "sector", _one("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum")
    ),
    Dimension(
        "shared_mem_util",
        "shared_load_bank_conflicts",
        "conflict",
        _one("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
    ),
    Dimension(
        "shared_mem_util",
        "shared_store_bank_conflicts",
        "conflict",
        _one("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
    ),
    Dimension(
        "shared_mem_util",
        "shared_load_conflicts_per_wavefront",
        "fraction",
        _ratio(
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
            "no shared loads",
        ),
    ),
    Dimension(
        "shared_mem_util",
        "shared_store_conflicts_per_wavefront",
        "fraction",
        _ratio(
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
            "no shared stores",
        ),
    ),
    Dimension(
        "shared_mem_util", "occupancy_limit_shared_mem", "block", _one("launch__occupancy_limit_shared_mem")
    ),
    Dimension(
        "tensor_core_util",
        "gmma_instructions",
        "instruction",
        _one("sm__inst_executed_pipe_tensor_op_gmma.sum"),
    ),
    Dimension("pcie_bw", "pcie_read_bytes", "byte", _one("pcie__read_bytes.sum")),
    Dimension("pcie_bw", "pcie_write_bytes", "byte", _one("pcie__write_bytes.sum")),
    Dimension("nvlink_bw", "nvlink_tx_bytes", "byte", _one("nvltx__bytes.sum")),
    Dimension("nvlink_bw", "nvlink_rx_bytes", "byte", _one("nvlrx__bytes.sum")),
    Dimension("l1_cache_hit", "l1_hit_rate_pct", "%", _one("l1tex__t_sector_hit_rate.pct")),
    Dimension(
        "inst_issue_stall",
        "issue_active_pct",
        "%",
        _one("smsp__issue_active.avg.pct_of_peak_sustained_active"),
    ),
    *(
        Dimension(
            "inst_issue_stall",
            f"stall_{r}",
            "cycle/instruction",
            _one(f"smsp__average_warp_latency_issue_stalled_{r}.ratio"),
        )
        for r in _STALLS
    ),
    Dimension(
        "occupancy", "achieved_occupancy_pct", "%", _one("sm__warps_active.avg.pct_of_peak_sustained_active")
    ),
    Dimension("occupancy", "theoretical_occupancy_pct", "%", _one("sm__maximum_warps_per_active_cycle_pct")),
)


def _metric_names(d: Dimension) -> list[str]:
    """The ncu metrics a dimension reads (found by evaluating it on an empty table and reading names)."""
    names = []
    probe: Metrics = {}
    while True:
        r = d.get(probe)
        m = re.match(r"metric (\S+) not in", r) if isinstance(r, str) else None
        if m is None:
            return names
        names.append(m.group(1))
        probe[m.group(1)] = NcuMetric(value=1.0)


def requested_metrics(extra: Sequence[str] = ()) -> list[str]:
    """The --metrics list: every metric a dimension reads (launch__* come with every raw page), then extra."""
    out: list[str] = []
    for d in DIMENSIONS:
        out += [n for n in _metric_names(d) if not n.startswith("launch__") and n not in out]
    return out + [m for m in extra if m not in out]


def with_dimensions(profile: NcuKernelProfile) -> NcuKernelProfile:
    """The profile with `values` and `absent` filled from its metrics."""
    values, absent = [], []
    for d in DIMENSIONS:
        r = d.get(profile.metrics)
        if isinstance(r, str):
            absent.append(AbsentValue(resource=d.resource, name=d.name, reason=r))
        else:
            # ncu's own unit when it printed one for a single metric (it knows best), else ours.
            values.append(
                ProfileValue(resource=d.resource, name=d.name, value=r[0], unit=r[2] or d.unit, source=r[1])
            )
    return msgspec.structs.replace(profile, values=values, absent=absent)


def select_kernel(profiles: list[NcuKernelProfile], kernel: str) -> NcuKernelProfile:
    """The first row whose name is `kernel` (or contains it: ncu may print a demangled signature)."""
    for p in profiles:
        if p.kernel == kernel:
            return p
    for p in profiles:
        if kernel in p.kernel:
            return p
    names = sorted({p.kernel for p in profiles})
    raise NcuCsvError(f"kernel {kernel!r} not among the profiled kernels: {', '.join(names) or 'none'}")


def available_metric_bases(query_output: str) -> set[str]:
    """Base metric names from `ncu --query-metrics` output (first token of each metric line)."""
    return {
        m.group(1)
        for ln in query_output.splitlines()
        if (m := re.match(r"^\s*([a-z0-9_]+__[a-z0-9_]+)\b", ln))
    }


def metric_base(metric: str) -> str:
    return metric.split(".", 1)[0]
