"""Lane mapping and sector counting on hand-built layouts and addresses (numbers derived in comments)."""

from __future__ import annotations

import numpy as np
import pytest

from services.toolrunner.tools.mem_access_profile.coalescing import lane_plan, scalar_plan, tally
from shared.parsers.ttgir_memops import BlockedLayout

ONE_D = BlockedLayout((1,), (32,), (4,), (0,))
VEC4 = BlockedLayout((4,), (32,), (4,), (0,))
ROW_MAJOR = BlockedLayout((1, 4), (4, 8), (4, 1), (1, 0))


def _addr(n: int, stride_bytes: int, base: int = 1 << 20) -> np.ndarray:
    return (base + stride_bytes * np.arange(n)).astype(np.uint64)


def test_one_element_per_lane_maps_lane_to_consecutive_elements() -> None:
    plan = lane_plan(ONE_D, (128,), 4, 1, False)
    assert plan.flat.shape == (4, 32, 1)  # 4 warps x 1 request each
    assert plan.flat[1, :, 0].tolist() == list(range(32, 64))


def test_contiguous_fp32_is_4_sectors_per_request() -> None:
    # 32 lanes x 4 B = 128 B = 4 sectors of 32 B, every byte used.
    t = tally(lane_plan(ONE_D, (128,), 4, 1, False), _addr(128, 4), np.ones(128, bool), 4)
    assert (t.requests, t.sectors, t.bytes_requested, t.ideal_sectors, t.active_lanes) == (4, 16, 512, 16, 128)


def test_vectorised_fp32_is_16_sectors_per_request() -> None:
    # sizePerThread 4, vec 4: one request moves 32 lanes x 16 B = 512 B = 16 sectors; BLOCK 1024 over a
    # 512-element CTA tile repeats twice, so 4 warps x 2 = 8 requests (the probe's add_kernel).
    t = tally(lane_plan(VEC4, (1024,), 4, 4, False), _addr(1024, 4), np.ones(1024, bool), 4)
    assert (t.requests, t.sectors) == (8, 128)


def test_size_per_thread_4_issued_one_float_at_a_time_wastes_half_of_each_sector() -> None:
    # vec 1: request k has lane l at element 4 l + k: 32 addresses 16 B apart span 512 B = 16 sectors,
    # each holding 2 of the requested floats (8 B used of 32). 4 warps x 2 reps x 4 slots = 32 requests.
    t = tally(lane_plan(VEC4, (1024,), 4, 1, False), _addr(1024, 4), np.ones(1024, bool), 4)
    assert (t.requests, t.sectors, t.bytes_requested) == (32, 512, 4096)
    assert t.bytes_requested / t.sectors == 8.0


@pytest.mark.parametrize(("stride", "sectors_per_request"), [(2, 8), (8, 32), (32, 32)])
def test_strided_fp32(stride: int, sectors_per_request: int) -> None:
    # lanes 4 * stride bytes apart: stride 2 -> 256 B span = 8 sectors; stride >= 8 -> every lane alone.
    t = tally(lane_plan(ONE_D, (128,), 4, 1, False), _addr(128, 4 * stride), np.ones(128, bool), 4)
    assert t.sectors == 4 * sectors_per_request


def test_masked_tail_counts_only_requests_with_an_active_lane() -> None:
    # n = 33 of 128: warp 0 full (4 sectors), warp 1 one lane (1 sector), warps 2-3 fully masked.
    mask = np.arange(128) < 33
    t = tally(lane_plan(ONE_D, (128,), 4, 1, False), _addr(128, 4), mask, 4)
    assert (t.requests, t.sectors, t.active_lanes, t.bytes_requested, t.ideal_sectors) == (2, 5, 33, 132, 5)


def test_2d_row_major_layout_covers_4_rows_of_32_per_warp() -> None:
    # threadsPerWarp [4, 8] with 4 floats per lane: a warp holds rows 4w..4w+3, 32 columns each.
    plan = lane_plan(ROW_MAJOR, (32, 32), 4, 4, False)
    assert plan.flat.shape == (8, 32, 4)  # 4 warps x 2 row repetitions (16-row CTA tile over 32 rows)
    rows = {int(i) // 32 for i in plan.flat[0].ravel()}
    assert rows == {0, 1, 2, 3}
    # row-major fp32 32 x 32 with a 128 B row: each request covers 4 whole rows = 16 sectors
    t = tally(plan, _addr(1024, 4), np.ones(1024, bool), 4)
    assert t.sectors / t.requests == 16


def test_the_same_layout_reading_a_column_major_tile_uses_half_of_each_sector() -> None:
    # Element (r, c) at c * 32 + r (column-major), one float per instruction (vec 1): in request k the
    # 8 lanes along dim 1 sit at columns 4 l + k and the 4 lanes along dim 0 at rows 4 w + l'. Each of the
    # 8 columns contributes its 4 consecutive rows, 16 B inside one sector: 8 sectors, 16 B used of each.
    r, c = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    addr = (4096 + 4 * (c * 32 + r)).astype(np.uint64)
    t = tally(lane_plan(ROW_MAJOR, (32, 32), 4, 1, False), addr, np.ones((32, 32), bool), 4)
    assert t.requests == 32  # 4 warps x 2 row repetitions x 4 slots
    assert t.sectors / t.requests == 8
    assert t.bytes_requested / t.sectors == 16


def test_broadcast_layout_loads_from_every_warp_but_stores_once() -> None:
    # 64 elements on a 128-thread layout: warps 2 and 3 hold copies of warps 0 and 1. Loads are issued
    # by all 4 warps; Triton masks the copies' stores (PTX: st predicated on tid < 64).
    addr, mask = _addr(64, 4), np.ones(64, bool)
    ld = tally(lane_plan(ONE_D, (64,), 4, 1, False), addr, mask, 4)
    st = tally(lane_plan(ONE_D, (64,), 4, 1, True), addr, mask, 4)
    assert (ld.requests, ld.sectors) == (4, 16)
    assert (st.requests, st.sectors) == (2, 8)


def test_sliced_layout_broadcasts_over_the_removed_dim() -> None:
    # slice(dim=0) of ROW_MAJOR for a 32-vector: the 4 lanes and 4 warps along dim 0 hold copies; a
    # request is 8 distinct lanes x 16 B = 128 B = 4 sectors, all 32 lanes active, 128 distinct bytes.
    sliced = BlockedLayout((1, 4), (4, 8), (4, 1), (1, 0), sliced_dim=0)
    t = tally(lane_plan(sliced, (32,), 4, 4, False), _addr(32, 4), np.ones(32, bool), 4)
    assert (t.requests, t.sectors, t.active_lanes, t.bytes_requested) == (4, 16, 128, 512)


def test_scalar_pointer_is_one_sector_per_warp_and_one_store() -> None:
    addr, mask = np.array([1 << 20], np.uint64), np.ones(1, bool)
    assert (tally(scalar_plan(4, False), addr, mask, 4).requests, tally(scalar_plan(4, True), addr, mask, 4).requests) == (4, 1)


def test_vector_width_that_does_not_divide_size_per_thread_is_refused() -> None:
    with pytest.raises(ValueError, match="does not divide"):
        lane_plan(VEC4, (1024,), 4, 3, False)
    with pytest.raises(ValueError, match="num_warps=8"):
        lane_plan(ONE_D, (128,), 8, 1, False)
