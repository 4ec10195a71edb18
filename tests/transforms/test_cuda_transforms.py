"""CUDA C++ transformations on CUDA tasks (the suite's l1_transpose_cuda and a fresh unpadded tiled
transpose): the rewritten source builds for sm_90 on CPU (nvcc/NVRTC through the compile tool) and the
PTX shows the change. CPU correctness of a CUDA task is not checkable (it launches through NVRTC on a
GPU only): benchmarks/runs/i20_transforms.sh checks and times them on the H200."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shared.transforms.base import Refused
from shared.transforms.table import apply
from tests.transforms.harness import ROOT, build, candidate, make_compiler

SUITE = "benchmarks/tasks/l1_transpose_cuda.py"
TILE = "tests/transforms/tasks/transpose_tile_cuda.py"


@pytest.fixture(scope="module")
def compiler(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return make_compiler(tmp_path_factory.mktemp("kpilot-compile"))


def test_launch_bounds_reach_the_ptx_as_the_launch_block(tmp_path: Path, compiler) -> None:
    cand, got = candidate(SUITE, "cuda_launch_bounds", tmp_path, {"min_blocks": 2})
    assert "__launch_bounds__((BLOCK_X) * (BLOCK_Y) * (1), 2) transpose(" in got.source
    assert ".maxntid" not in build(compiler, SUITE).ptx
    ptx = build(compiler, cand, {"BLOCK_X": 32, "BLOCK_Y": 16}).ptx
    assert re.search(r"\.maxntid 512, 1, 1", ptx) and re.search(r"\.minnctapersm 2", ptx)
    again = apply(got.source, "cuda_launch_bounds")
    assert isinstance(again, Refused) and "already has __launch_bounds__" in again.reason


def test_smem_pad_grows_the_row_pitch(tmp_path: Path, compiler) -> None:
    cand, got = candidate(TILE, "cuda_smem_pad", tmp_path)
    assert "__shared__ float tile[BLOCK][BLOCK + 1];" in got.source

    def smem(ptx: str) -> int:
        return int(re.search(r"\.shared \.align \d+ \.b8 \w+\[(\d+)\]", ptx).group(1))  # type: ignore[union-attr]
    assert smem(build(compiler, TILE).ptx) == 32 * 32 * 4
    assert smem(build(compiler, cand).ptx) == 32 * 33 * 4


def test_cuda_refusals() -> None:
    got = apply((ROOT / SUITE).read_text(), "cuda_smem_pad")  # the suite's tile is padded already
    assert isinstance(got, Refused) and "no unpadded 2-D __shared__ array" in got.reason
    got = apply((ROOT / "benchmarks/tasks/l1_gelu.py").read_text(), "cuda_launch_bounds")
    assert isinstance(got, Refused) and "not a CUDA C++ task" in got.reason
    src = (ROOT / TILE).read_text().replace("block=(BLOCK, ROWS, 1)", "block=(BLOCK, rows % 8 + 1, 1)")
    got = apply(src, "cuda_launch_bounds")
    assert isinstance(got, Refused) and "neither int literals nor CONFIG keys" in got.reason
