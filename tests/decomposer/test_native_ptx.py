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
