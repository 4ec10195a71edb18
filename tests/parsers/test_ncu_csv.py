"""The ncu raw-page parser and the state-dimension mapping, on the real H200 CSV."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import msgspec
import pytest

from shared.parsers.ncu import (
    DIMENSIONS,
    NcuCsvError,
    metric_base,
    parse_ncu_csv,
    parse_number,
    requested_metrics,
    select_kernel,
    with_dimensions,
)
from shared.tools.profile import NcuProfileOutput

NCU = Path(__file__).resolve().parents[1] / "fixtures" / "h200-probe" / "ncu_raw.csv"


@pytest.fixture(scope="module")
def profiles():
    return parse_ncu_csv(NCU.read_text())


def test_preamble_and_units_row_are_skipped(profiles) -> None:
    assert len(profiles) == 234  # IDs 0..233: every data row, none of the ==PROF== lines or the units row
    assert profiles[0].kernel.startswith("void at::")
    assert profiles[2].kernel == "add_kernel" and profiles[2].device == "NVIDIA H200"


def test_thousands_separators_and_units(profiles) -> None:
    add = select_kernel(profiles, "add_kernel")
    m = add.metrics
    assert m["launch__grid_size"].value == 1048576.0 and m["launch__grid_size"].text == "1,048,576"
    assert m["dram__bytes_read.sum"].unit == "byte"
    assert m["launch__cluster_scheduling_policy"].value is None
    assert m["launch__cluster_scheduling_policy"].text == "PolicySpread"
    assert add.block == "(128, 1, 1)" and add.grid == "(1048576, 1, 1)"
    assert add.duration_ns == m["gpu__time_duration.sum"].value  # printed in ns
    assert not any(k.startswith("device__") for k in m)


def test_number_parsing() -> None:
    assert parse_number("1,098.67") == 1098.67
    assert parse_number("-3") == -3.0 and parse_number("1.5e3") == 1500.0
    assert parse_number("(128, 1, 1)") is None and parse_number("n/a") is None and parse_number("") is None
    assert parse_number("1,0") is None  # not a thousands group


def test_transpose_dimensions(profiles) -> None:
    p = with_dimensions(select_kernel(profiles, "transpose_naive"))
    v = {x.name: x for x in p.values}
    assert v["load_sectors_per_request"].value == pytest.approx(
        p.metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"].value
        / p.metrics["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"].value
    )
    assert v["load_sectors_per_request"].source.count("/") == 1
    assert v["threads_per_instruction"].value == 32.0
    assert v["shared_load_bank_conflicts"].value > 0  # naive transpose through shared memory conflicts
    assert v["registers_per_thread"].value == 27 and v["registers_per_thread"].unit == "register/thread"
    assert v["dram_throughput_pct"].unit == "%"
    assert v["tensor_pipe_active_pct"].value == 0.0  # measured zero stays a value


def test_missing_metrics_are_absent_with_reason_never_zero(profiles) -> None:
    p = with_dimensions(select_kernel(profiles, "add_kernel"))
    absent = {a.name: a for a in p.absent}
    assert "l2_throughput_pct" in absent and "not in the ncu output" in absent["l2_throughput_pct"].reason
    assert "pcie_read_bytes" in absent and absent["pcie_read_bytes"].resource == "pcie_bw"
    assert not {x.name for x in p.values} & set(absent)
    assert len(p.values) + len(p.absent) == len(DIMENSIONS)


def test_zero_denominator_is_absent_with_reason(profiles) -> None:
    # torch's randn kernel writes but never loads from global memory: 0 load requests.
    p = with_dimensions(profiles[0])
    absent = {a.name: a.reason for a in p.absent}
    assert "no global loads" in absent["load_sectors_per_request"]
    assert any(x.name == "store_sectors_per_request" for x in p.values)


def test_record_is_schema_valid(profiles) -> None:
    out = NcuProfileOutput(
        profile=with_dimensions(select_kernel(profiles, "softmax_naive")),
        report_path="/tmp/x.ncu-rep",
        metrics_requested=requested_metrics(),
    )
    jsonschema.validate(msgspec.to_builtins(out), msgspec.json.schema(NcuProfileOutput))


def test_select_kernel_lists_profiled_names(profiles) -> None:
    with pytest.raises(NcuCsvError, match="softmax_naive"):
        select_kernel(profiles, "matmul_kernel")


def test_no_header_says_what_to_check() -> None:
    with pytest.raises(NcuCsvError, match="-k regex"):
        parse_ncu_csv("==PROF== Disconnected from process 1\n==WARNING== No kernels were profiled.\n")


def test_requested_metrics_cover_gpu_md_and_exclude_launch_stats() -> None:
    ms = requested_metrics(["dram__bytes.sum"])
    assert "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum" in ms and "sm__cycles_active.avg" in ms
    assert not any(m.startswith("launch__") for m in ms)
    assert ms[-1] == "dram__bytes.sum" and len(ms) == len(set(ms))


def test_metric_base() -> None:
    assert metric_base("sm__throughput.avg.pct_of_peak_sustained_elapsed") == "sm__throughput"
    assert metric_base("sm__maximum_warps_per_active_cycle_pct") == "sm__maximum_warps_per_active_cycle_pct"
