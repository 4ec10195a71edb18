"""ncu_profile records -> per-kernel StateTriples, on the two real H200 records in tests/fixtures/h200
(captured by tests/toolrunner/test_gpu_tools.py with $KPILOT_FIXTURE_OUT, see that README). Every
expected value below is read from the fixture; the comment names the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.telemetry.ncu_state import NCU_DIMENSIONS, NcuRecordError, kernel_vector, ncu_output, normalize
from shared.messages import StateTriple, StateVector, decode, encode
from shared.subjects import KERNEL_PROFILE, kernel_profile_subject, permissions, stream_for

H200 = Path(__file__).resolve().parents[1] / "fixtures" / "h200"


def _record(name: str) -> dict:
    return json.loads((H200 / f"ncu_profile_{name}.json").read_text())


def _vector(name: str) -> StateVector:
    return kernel_vector(ncu_output(_record(name)), node="h200", gpu="cuda:0", source="telemetry")


def _by_source(v: StateVector) -> dict[str, StateTriple]:
    return {t.source: t for t in v.triples}


def test_vector_add_record_becomes_kernel_triples() -> None:
    v = _vector("vector_add")
    assert v.gpu_name == "NVIDIA H200"  # profile.device
    assert len(v.triples) == 38  # one per profile.values entry
    assert {t.space for t in v.triples} == {"kernel:add_kernel"}  # profile.kernel
    assert {t.time for t in v.triples} == {"current"}
    t = _by_source(v)
    # profile.values[sm_active_cycles_fraction]: 0.9927045126248523 "fraction"
    assert t["ncu:sm__cycles_active.avg/gpc__cycles_elapsed.max"] == StateTriple(
        "sm_active", "current", "kernel:add_kernel", 0.9927045126248523, "fraction",
        "ncu:sm__cycles_active.avg/gpc__cycles_elapsed.max")
    # profile.values[l2_bytes_per_second]: 3.789106 "Tbyte/s" -> GB/s
    l2 = t["ncu:lts__t_bytes.sum.per_second"]
    assert (l2.resource, l2.unit) == ("l2_bandwidth", "GB/s") and l2.value == pytest.approx(3789.106, rel=1e-12)
    # profile.values[tensor_pipe_active_pct]: 1.266067 "%"
    tc = t["ncu:sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"]
    assert (tc.resource, tc.value, tc.unit) == ("tc_occupancy", 1.266067, "pct")
    # profile.values[load_sectors_per_request]: 4.0 (= 16,777,216 sectors / 4,194,304 requests)
    ld = t["ncu:l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum/l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
    assert (ld.resource, ld.value, ld.unit) == ("gmem_coalescing", 4.0, "sector/request")
    # profile.values[threads_per_instruction]: 32.0, no divergence
    wd = t["ncu:smsp__thread_inst_executed_per_inst_executed.ratio"]
    assert (wd.resource, wd.value, wd.unit) == ("warp_divergence", 32.0, "thread")
    # profile.values[registers_per_thread]: 16.0
    assert t["ncu:launch__registers_per_thread"].value == 16.0
    # profile.values[shared_load_bank_conflicts]: 0.0
    assert t["ncu:l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"].resource == "shared_mem_util"
    # profile.values[gmma_instructions]: 0.0 "inst" - a vector add issues no wgmma
    assert (t["ncu:sm__inst_executed_pipe_tensor_op_gmma.sum"].resource,
            t["ncu:sm__inst_executed_pipe_tensor_op_gmma.sum"].value) == ("tensor_core_util", 0.0)
    # profile.values[l1_hit_rate_pct]: 0.0 "%"
    assert (t["ncu:l1tex__t_sector_hit_rate.pct"].value, t["ncu:l1tex__t_sector_hit_rate.pct"].unit) == (0.0, "pct")
    # profile.values[stall_long_scoreboard]: 1015.187601 "inst/warp"
    st = t["ncu:smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio"]
    assert (st.resource, st.value, st.unit) == ("inst_issue_stall", 1015.187601, "inst/warp")
    # profile.values[dram_read_bytes]: 536.87552 "Mbyte"; [pcie_write_bytes]: 34.304 "Kbyte" -> bytes
    assert t["ncu:dram__bytes_read.sum"].unit == "B"
    assert t["ncu:dram__bytes_read.sum"].value == pytest.approx(536_875_520.0, rel=1e-12)
    assert t["ncu:pcie__write_bytes.sum"].value == pytest.approx(34_304.0, rel=1e-12)


def test_vector_add_absent_dimensions_carry_the_records_reasons() -> None:
    v = _vector("vector_add")
    # profile.absent: nvlink_tx_bytes / nvlink_rx_bytes, "metric nvl{t,r}x__bytes.sum not in the ncu output".
    # Its two shared conflicts-per-wavefront gaps do not make shared_mem_util absent: it has bank-conflict
    # and occupancy-limit figures.
    assert [a.resource for a in v.absent] == ["nvlink_bw"]
    assert v.absent[0].reason == ("nvlink_tx_bytes: metric nvltx__bytes.sum not in the ncu output; "
                                  "nvlink_rx_bytes: metric nvlrx__bytes.sum not in the ncu output")
    assert not any(t.resource == "nvlink_bw" for t in v.triples)  # absent, never 0
    assert {t.resource for t in v.triples} | {a.resource for a in v.absent} >= set(NCU_DIMENSIONS)


def test_matmul_record_becomes_kernel_triples() -> None:
    v = _vector("matmul")
    assert len(v.triples) == 40 and {t.space for t in v.triples} == {"kernel:matmul_kernel"}
    t = _by_source(v)
    # profile.values[l2_bytes_per_second]: 119.42623 "Gbyte/s"
    assert t["ncu:lts__t_bytes.sum.per_second"].unit == "GB/s"
    assert t["ncu:lts__t_bytes.sum.per_second"].value == pytest.approx(119.42623, rel=1e-12)
    # profile.values[load_sectors_per_request]: 2.554506842850401, under the 4 of a fully coalesced load
    ld = t["ncu:l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum/l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
    assert ld.value == 2.554506842850401
    # profile.values[load_bytes_per_sector]: 20.28487 "byte/sector" (kept: not a byte volume)
    by = t["ncu:smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"]
    assert (by.value, by.unit) == (20.28487, "byte/sector")
    # profile.values[threads_per_instruction]: 31.99
    assert t["ncu:smsp__thread_inst_executed_per_inst_executed.ratio"].value == 31.99
    # profile.values[registers_per_thread]: 158.0; [occupancy_limit_registers]: 3.0 "block"
    assert t["ncu:launch__registers_per_thread"].value == 158.0
    assert (t["ncu:launch__occupancy_limit_registers"].value, t["ncu:launch__occupancy_limit_registers"].unit) \
        == (3.0, "block")
    # profile.values[gmma_instructions]: 360.0 "inst"; [tensor_pipe_active_pct]: 2.622616 "%"
    assert t["ncu:sm__inst_executed_pipe_tensor_op_gmma.sum"].value == 360.0
    assert t["ncu:sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"].value == 2.622616
    # profile.values[shared_load_conflicts_per_wavefront]: 0.0 "fraction" (this kernel loads shared memory)
    sh = t["ncu:l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum/"
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
    assert (sh.resource, sh.value, sh.unit) == ("shared_mem_util", 0.0, "fraction")
    # profile.values[l1_hit_rate_pct]: 28.283186 "%"
    assert t["ncu:l1tex__t_sector_hit_rate.pct"].value == 28.283186
    # profile.values[dram_write_bytes]: 0.0 "byte"
    assert (t["ncu:dram__bytes_write.sum"].value, t["ncu:dram__bytes_write.sum"].unit) == (0.0, "B")
    assert [a.resource for a in v.absent] == ["nvlink_bw"]  # profile.absent: the two nvlink figures


def test_a_dimension_without_figures_or_reasons_is_absent_not_zero() -> None:
    rec = _record("matmul")
    # The real record with its warp_divergence figure taken out (what an older runner would send).
    rec["profile"]["values"] = [v for v in rec["profile"]["values"] if v["resource"] != "warp_divergence"]
    v = kernel_vector(ncu_output(rec), node="n", gpu="g", source="t", job_id="j", causation_id="c")
    div = [a for a in v.absent if a.resource == "warp_divergence"]
    assert div and div[0].reason == "ncu_profile gave no warp_divergence figure for kernel matmul_kernel"
    assert not any(t.resource == "warp_divergence" for t in v.triples)
    assert (v.job_id, v.causation_id, v.period_s) == ("j", "c", 0.0)


def test_units_seen_in_the_raw_ncu_csv() -> None:
    # Every unit of tests/fixtures/h200/ncu_vector_add_raw.csv's unit row that names bytes.
    assert normalize(3.789106, "Tbyte/s") == (pytest.approx(3789.106), "GB/s")
    assert normalize(119.42623, "Gbyte/s") == (119.42623, "GB/s")
    assert normalize(1.5, "Gbyte") == (1.5e9, "B")
    assert normalize(34.304, "Kbyte") == (pytest.approx(34304.0), "B")
    assert normalize(0.0, "byte") == (0.0, "B")
    assert normalize(2.0, "Kbyte/block") == (2.0, "Kbyte/block")  # a per-block size, not a volume
    assert normalize(20.28487, "byte/sector") == (20.28487, "byte/sector")
    assert normalize(62.9, "%") == (62.9, "pct")


def test_a_record_of_another_shape_is_refused_with_the_fix() -> None:
    rec = _record("vector_add")
    del rec["profile"]["kernel"]
    with pytest.raises(NcuRecordError, match="shared/tools/profile.py"):
        ncu_output(rec)


def test_kernel_subjects_and_permissions() -> None:
    assert kernel_profile_subject("h200.a", "matmul_kernel") == "telemetry.kernel.h200_a.matmul_kernel"
    assert stream_for(kernel_profile_subject("n", "k")).name == "TELEMETRY"
    with pytest.raises(KeyError):  # a stream would capture the request and answer it with a PubAck
        stream_for(KERNEL_PROFILE)
    assert KERNEL_PROFILE in permissions("telemetry").subscribe
    assert KERNEL_PROFILE in permissions("operator").publish
    assert KERNEL_PROFILE not in permissions("planner").publish
    v = _vector("matmul")
    assert decode(encode(v)) == v  # a bus message that survives the wire
