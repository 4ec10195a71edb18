"""mem_access_profile end to end on CPU: real compile for cuda:90, real interpreter run, exact counts.

Every expected number is derived in the comments from the layout Triton chose (its TTGIR, checked in the
tool's `layout` field) and the addresses: one request = one warp instruction; sectors are 32 B.
The last test compares with real ncu counts from the H200 probe (tests/fixtures/h200-probe).
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path

import pytest

from services.toolrunner.tool import ToolFailure
from services.toolrunner.tools.mem_access_profile.spec import run
from shared.tools.memaccess import KernelMemProfile, MemAccessInput, MemInstruction

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "tasks"
ADD = str(ROOT / "examples" / "vector_add.py")
NCU_RAW = Path(__file__).resolve().parents[1] / "fixtures" / "h200-probe" / "ncu_raw.csv"


@cache
def _profile(task: str, shape: str = "micro", config: tuple[tuple[str, int], ...] = (),
             max_programs: int = 256) -> KernelMemProfile:
    out = run(MemAccessInput(task_path=task, shape=shape, config=dict(config), max_programs=max_programs))
    (kernel,) = out.kernels
    return kernel


def _op(k: KernelMemProfile, kind: str, line: int | None = None) -> MemInstruction:
    return next(i for i in k.instructions if i.kind == kind and (line is None or i.line == line))


def test_contiguous_fp32_one_float_per_lane_is_4_sectors_per_request() -> None:
    # vector_add, BLOCK 128, 4 warps: 128 threads for 128 elements, layout sizePerThread [1]. n = 4099:
    # programs 0..31 are full (4 warps x 1 request, each 32 lanes x 4 B = 128 B = 4 sectors); program 32
    # holds elements 4096..4098, 3 lanes of warp 0 in one sector. Per load: 32 x 4 + 1 = 129 requests,
    # 32 x 4 x 4 + 1 = 513 sectors.
    k = _profile(ADD, config=(("BLOCK", 128),))
    assert (k.grid, k.num_warps, k.programs_total, k.programs_analysed) == ([33, 1, 1], 4, 33, 33)
    assert [(i.kind, i.line) for i in k.instructions] == [("load", 13), ("load", 14), ("store", 15)]
    for i in k.instructions:
        assert i.layout == "sizePerThread=[1] threadsPerWarp=[32] warpsPerCTA=[4] order=[0]"
        assert (i.vector_bytes, i.vector_source) == (4, "ptx")
        assert (i.executions, i.requests, i.sectors) == (33, 129, 513)
        assert i.bytes_per_sector == pytest.approx(4099 * 4 / 513)
    x = _op(k, "load", 13)
    assert x.source == "x = tl.load(x_ptr + offs, mask=mask)"
    assert (k.load_requests, k.load_sectors, k.store_requests, k.store_sectors) == (258, 1026, 129, 513)


def test_four_floats_per_thread_loaded_one_at_a_time_use_8_of_32_bytes_per_sector() -> None:
    # BLOCK 1024: sizePerThread [4] but n = 4099 is not a multiple of 16, so the PTX is ld.global.b32
    # (4 B per lane). Request k of a lane chunk has lane l at element 4 l + k: 32 addresses 16 B apart,
    # 16 sectors, 8 B used in each. Programs 0..3: 4 warps x 2 reps x 4 slots = 32 requests; program 4
    # (elements 4096..4098) has 3 requests of one active lane each: 4 x 32 + 3 = 131 requests,
    # 4 x 32 x 16 + 3 = 2051 sectors.
    k = _profile(ADD, config=(("BLOCK", 1024),))
    x = _op(k, "load", 13)
    assert x.layout == "sizePerThread=[4] threadsPerWarp=[32] warpsPerCTA=[4] order=[0]"
    assert x.vector_bytes == 4
    assert (x.requests, x.sectors) == (131, 2051)
    assert x.sectors_per_request == pytest.approx(2051 / 131)
    assert x.bytes_per_sector == pytest.approx(4099 * 4 / 2051)  # 7.99: a quarter of each sector


def test_strided_read_by_2_is_8_sectors_per_request_using_16_bytes_each() -> None:
    # gather_strided, stride 2 (runtime): lanes 8 B apart, 32 lanes span 256 B = 8 sectors, 16 B used
    # of each. n = 1024, BLOCK 128: 8 programs x 4 warps = 32 requests. The dense store is 4 per request.
    k = _profile(str(FIX / "mem_strided.py"))
    ld, st = _op(k, "load"), _op(k, "store")
    assert (ld.requests, ld.sectors, ld.sectors_per_request, ld.bytes_per_sector) == (32, 256, 8.0, 16.0)
    assert ld.ideal_sectors_per_request == 4.0
    assert (st.requests, st.sectors, st.sectors_per_request, st.bytes_per_sector) == (32, 128, 4.0, 32.0)


def test_strided_read_by_32_is_a_sector_per_lane() -> None:
    # stride 32 floats = 128 B: every lane in its own sector, 4 B used of 32.
    ld = _op(_profile(str(FIX / "mem_strided.py"), shape="edge:0"), "load")
    assert (ld.sectors_per_request, ld.bytes_per_sector, ld.active_lanes_per_request) == (32.0, 4.0, 32.0)


def test_naive_transpose_is_coalesced_on_both_sides_because_each_access_gets_its_own_layout() -> None:
    # 32 x 32 tile, 4 warps. The load x[m, n] and the transposed store out[n, m] are each contiguous
    # along their own dim 1, so both get sizePerThread [1, 4], threadsPerWarp [4, 8], warpsPerCTA [4, 1],
    # order [1, 0] with 16-B accesses: a request covers 4 rows x 32 floats = 4 x 128 B = 16 sectors.
    # 16-row CTA tile over 32 rows: 4 warps x 2 = 8 requests per program, 2 x 2 programs.
    k = _profile(str(FIX / "probe_transpose.py"))
    for i in (_op(k, "load"), _op(k, "store")):
        assert i.layout == "sizePerThread=[1, 4] threadsPerWarp=[4, 8] warpsPerCTA=[4, 1] order=[1, 0]"
        assert (i.vector_bytes, i.requests, i.sectors, i.bytes_per_sector) == (16, 32, 512, 32.0)


def test_transpose_with_a_hidden_column_stride_reads_uncoalesced() -> None:
    # x's unit column stride is a runtime value (do_not_specialize), so only the store has known
    # contiguity (along m, dim 0); Triton uses its layout for the load too: sizePerThread [4, 1],
    # threadsPerWarp [8, 4], warpsPerCTA [1, 4], order [0, 1]. The load cannot vectorise (4 B): request k
    # has 8 lanes on rows 4 l + k (256 B apart) and 4 lanes on adjacent columns: 8 rows x 16 B = 8 sectors,
    # 16 B used of each. Requests: 4 warps x 4 slots x 2 column reps = 32 per program, x 4 programs.
    # The store moves 16 B per lane down m: 4 columns of out x 128 B = 16 sectors, 8 per program.
    k = _profile(str(FIX / "mem_transpose_hidden.py"))
    ld, st = _op(k, "load"), _op(k, "store")
    assert ld.layout == "sizePerThread=[4, 1] threadsPerWarp=[8, 4] warpsPerCTA=[1, 4] order=[0, 1]"
    assert (ld.vector_bytes, ld.requests, ld.sectors_per_request, ld.bytes_per_sector) == (4, 128, 8.0, 16.0)
    assert (st.vector_bytes, st.requests, st.sectors_per_request, st.bytes_per_sector) == (16, 32, 16.0, 32.0)


def test_sliced_bias_row_is_loaded_by_every_warp_in_4_sectors() -> None:
    # b[offs_n] for BN = 32 in slice(dim=0) of the row-major tile layout: 8 lanes x 16 B = 128 B = 4
    # sectors per request, the 4 row-lanes hold copies; each of the 4 warps issues it: 4 per program.
    k = _profile(str(FIX / "mem_bias_add.py"))
    b = _op(k, "load", 13)
    assert b.layout.startswith("slice(dim=0) of sizePerThread=[1, 4]")
    assert (b.requests, b.sectors_per_request, b.bytes_per_sector, b.active_lanes_per_request) == (
        8, 4.0, 32.0, 32.0)


def test_nested_and_multi_line_calls_find_their_own_ttgir_ops() -> None:
    # v = tl.load(x_ptr + tl.load(idx_ptr + offs)): the inner index load is contiguous int32 (4 sectors
    # per request); the outer reads x[8 i mod n], lanes 32 B apart (32 sectors, 4 B used of each). The
    # store call spans three lines; TTGIR places it on an argument's line, inside the call's span.
    k = _profile(str(FIX / "mem_gather.py"))
    outer, inner = (i for i in k.instructions if i.kind == "load")
    assert outer.line == inner.line == 12 and outer.column < inner.column
    assert (inner.dtype, inner.sectors_per_request, inner.bytes_per_sector) == ("i32", 4.0, 32.0)
    assert (outer.dtype, outer.sectors_per_request, outer.bytes_per_sector) == ("f32", 32.0, 4.0)
    st = _op(k, "store")
    assert (st.line, st.source, st.requests, st.sectors_per_request) == (
        13, "tl.store( out_ptr + offs, v, )", 32, 4.0)


def test_max_programs_samples_first_and_last() -> None:
    # probe_add micro: 64 programs; 4 analysed = programs 0, 21, 42, 63, each 8 requests per load.
    k = _profile(str(FIX / "probe_add.py"), max_programs=4)
    assert (k.programs_total, k.programs_analysed) == (64, 4)
    assert _op(k, "load", 17).requests == 32


def test_bad_requests_are_refused_with_the_fix() -> None:
    with pytest.raises(ToolFailure, match=r"not in KERNELS \['add_kernel'\]"):
        run(MemAccessInput(task_path=ADD, kernel="nope"))
    with pytest.raises(ToolFailure, match="config keys"):
        run(MemAccessInput(task_path=ADD, config={"BLOKC": 1}))
    with pytest.raises(ToolFailure, match="unknown shape 'tiny'"):
        run(MemAccessInput(task_path=ADD, shape="tiny"))


def _ncu_rows() -> list[dict[str, str]]:
    lines = NCU_RAW.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    rows = list(csv.DictReader(lines[start:]))
    return rows[1:]  # the first row after the header holds units


def _num(cell: str) -> int:
    return int(cell.replace(",", ""))


# (fixture task, ncu kernel name, grid as ncu printed it, dynamic smem as printed: tells the probe's
# 4096^2 transpose with 32 x 32 tiles from the 8192^2 one with 64 x 64 tiles)
PROBE = [("probe_add.py", "add_kernel", "(16384, 1, 1)", None),
         ("probe_softmax.py", "softmax_naive", "(4096, 1, 1)", "16"),
         ("probe_transpose.py", "transpose_naive", "(128, 128, 1)", "4,096")]


@pytest.mark.parametrize(("task", "name", "grid", "smem"), PROBE)
def test_model_matches_ncu_on_the_h200_probe(task: str, name: str, grid: str, smem: str | None) -> None:
    # Every program of these kernels does the same accesses, so the model's per-program counts on the
    # small `micro` shape times the probe's grid must equal ncu's sums exactly (add: 16 load requests
    # and 256 sectors per program; softmax: 32 and 512 per row; transpose: 8 and 128 per tile).
    row = next(r for r in _ncu_rows() if r["Kernel Name"] == name and r["Grid Size"] == grid
               and (smem is None or r["launch__shared_mem_per_block_dynamic"] == smem))
    programs = 1
    for g in grid.strip("()").split(","):
        programs *= int(g)
    k = _profile(str(FIX / task))
    assert k.programs_analysed == k.programs_total
    scale = programs // k.programs_total
    assert scale * k.programs_total == programs
    g = "l1tex__t_{}_pipe_lsu_mem_global_op_{}.sum"
    assert k.load_requests * scale == _num(row[g.format("requests", "ld")])
    assert k.load_sectors * scale == _num(row[g.format("sectors", "ld")])
    assert k.store_requests * scale == _num(row[g.format("requests", "st")])
    assert k.store_sectors * scale == _num(row[g.format("sectors", "st")])
