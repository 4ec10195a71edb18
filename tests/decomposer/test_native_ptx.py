"""The CUDA C++ path: per-lane address steps from real nvcc PTX (corpus/cuda_*, capture_cuda_corpus.py)."""

from __future__ import annotations

import pytest

from services.decomposer.decompose import decompose
from services.decomposer.ptx_lanes import parse_ptx
from shared.tools.decompose import Artifacts
from tests.decomposer import decomposer_corpus as corpus_io


def _ptx(case: str):
    return parse_ptx((corpus_io.CORPUS / case / "kernel.ptx").read_text())


def test_shared_column_read_is_32_way_and_padding_removes_it() -> None:
    col = [a for a in _ptx("cuda_smem_column").accesses if a.space == "shared" and a.kind == "load"]
    assert col and {a.coef for a in col} == {128} and {a.bank_ways() for a in col} == {32}
    padded = [a for a in _ptx("cuda_clean_transpose_tiled").accesses if a.space == "shared"]
    assert {a.coef for a in padded} == {4, 132} and {a.bank_ways() for a in padded} == {1}


def test_transpose_steps_and_float4_widths() -> None:
    naive = {(a.kind, a.coef) for a in _ptx("cuda_transpose_naive").accesses}
    assert naive == {("load", 4), ("store", "S")}  # coalesced read, write strided by `rows`
    f4 = _ptx("cuda_clean_copy_float4").accesses
    assert {(a.kind, a.coef, a.width) for a in f4} == {("load", 16, 16), ("store", 16, 16)}
    k = _ptx("cuda_branch_barrier")
    assert len(k.divergent_barriers) == 8  # the k loop is unrolled: 8 guarded pairs of bar.sync


def test_no_ttgir_no_ptx_is_refused() -> None:
    with pytest.raises(ValueError):
        decompose(Artifacts(ttgir="", ptx=""))
    with pytest.raises(ValueError, match="no .entry"):
        decompose(Artifacts(ttgir="", ptx=".version 9.0\n.target sm_90\n", kernel="k"))


def test_fixtures_match_cuda_cases_py() -> None:
    # re-run capture_cuda_corpus.py after editing corpus/cuda_cases.py
    from tests.decomposer.corpus.cuda_cases import CUDA_CASES

    for case in CUDA_CASES:
        d = corpus_io.CORPUS / case.name
        assert (d / f"{case.name}.cu").read_text() == case.source, case.name
        _art, facts, meta = corpus_io.load(d)
        assert meta["expect"] == case.expect and facts.grid == list(case.grid), case.name


def test_lane_parity_branch_is_divergent_and_warp_parity_is_not() -> None:
    lane = _ptx("cuda_lane_parity_branch")
    (b,) = [x for x in lane.divergent_branches if x.kind == "lane"]
    # both sides of the if/else (32 FMAs each) inside the `it` loop: a large share of its body
    assert b.in_loop and 0.3 < b.fraction <= 1.0 and b.instr.line
    warp = _ptx("cuda_clean_warp_parity_branch")
    assert warp.branches >= 1 and not warp.divergent_branches  # (tid >> 5) & 1 is uniform per warp
    # bound checks (i < n) split at most the tail warp: not counted
    assert not _ptx("cuda_clean_saxpy").divergent_branches


def test_unchecked_patterns_are_listed_with_what_they_need() -> None:
    art, facts, _ = corpus_io.load("cuda_lane_parity_branch")
    d = decompose(art, facts)
    assert d.findings[0].pattern == "warp_divergence" and d.findings[0].severity == "high"
    un = {u.pattern: u for u in d.unchecked}
    assert un["stall_dominant"].needs == ["ncu"] and un["roofline_far_below"].needs == ["measured"]
    assert "TTGIR-only" in un["k_loop_not_pipelined"].reason and "warp_divergence" not in un
    t_art, t_facts, _ = corpus_io.load("clean_add")
    t_art.ptx = ""
    wd = [u for u in decompose(t_art, t_facts).unchecked if u.pattern == "warp_divergence"]
    assert wd and wd[0].needs == ["ptx"]  # Triton path without PTX: divergence unchecked, not "clean"
