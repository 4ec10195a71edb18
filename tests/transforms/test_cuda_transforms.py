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
    got = apply((ROOT / SUITE).read_text(), "cuda_smem_pad")  # the suite kernel is naive: no shared tile
    assert isinstance(got, Refused) and "no unpadded 2-D __shared__ array" in got.reason
    got = apply((ROOT / "benchmarks/tasks/l1_gelu.py").read_text(), "cuda_launch_bounds")
    assert isinstance(got, Refused) and "not a CUDA C++ task" in got.reason
    src = (ROOT / TILE).read_text().replace("block=(BLOCK, ROWS, 1)", "block=(BLOCK, rows % 8 + 1, 1)")
    got = apply(src, "cuda_launch_bounds")
    assert isinstance(got, Refused) and "neither int literals nor CONFIG keys" in got.reason


EXAMPLE = "examples/transpose_cuda.py"  # blockDim.x/.y indices, the copy inside `if (...) { }`


@pytest.mark.parametrize("task", [SUITE, EXAMPLE])
def test_tiled_transpose_stages_the_copy_through_shared_memory(tmp_path: Path, compiler, task: str) -> None:
    cand, got = candidate(task, "cuda_tiled_transpose", tmp_path)
    assert "__shared__ float kp_tile[BLOCK_X][BLOCK_X + 1];" in got.source
    assert "(rows + BLOCK_X - 1) // BLOCK_X, 1)" in got.source  # grid y counts tiles of BLOCK_X rows
    assert "block=(BLOCK_X, BLOCK_Y, 1)" in got.source  # the block itself is unchanged
    base, built = build(compiler, task), build(compiler, cand, {"BLOCK_X": 32, "BLOCK_Y": 8})
    assert not re.search(r"\b(ld|st)\.shared", base.ptx)
    assert re.search(r"\bst\.shared\.(b|f)32", built.ptx) and re.search(r"\bld\.shared\.(b|f)32", built.ptx)
    assert "bar.sync" in built.ptx
    assert re.search(r"\.shared \.align \d+ \.b8 \w+\[4224\]", built.ptx)  # 32 x 33 floats
    assert "transposed_access_no_staging" in base.patterns
    assert "transposed_access_no_staging" not in built.patterns, built.patterns
    again = apply(got.source, "cuda_tiled_transpose")
    assert isinstance(again, Refused) and "already uses __shared__" in again.reason


def test_tiled_transpose_unpadded_then_smem_pad_stack(tmp_path: Path, compiler) -> None:
    one = apply((ROOT / SUITE).read_text(), "cuda_tiled_transpose", {"pad": 0})
    assert not isinstance(one, Refused), one
    assert "kp_tile[BLOCK_X][BLOCK_X + 0];" in one.source  # `+ k` counts as padded for cuda_smem_pad
    src = one.source.replace("[BLOCK_X + 0]", "[BLOCK_X]")
    cand, got = candidate(SUITE, "cuda_smem_pad", tmp_path, source=src)
    assert "kp_tile[BLOCK_X][BLOCK_X + 1];" in got.source
    assert re.search(r"\.shared \.align \d+ \.b8 \w+\[4224\]", build(compiler, cand).ptx)


def _naive(body: str, grid_y: str = "(rows + BLOCK_Y - 1) // BLOCK_Y") -> str:
    src = (ROOT / SUITE).read_text()
    old = "    if (r < rows && c < cols) out[(long long)c * rows + r] = in[(long long)r * cols + c];\n"
    assert old in src
    src = src.replace(old, body)
    return src.replace("(rows + BLOCK_Y - 1) // BLOCK_Y", grid_y)


@pytest.mark.parametrize(("body", "grid_y", "why"), [
    ("    if (r < rows && c < cols) out[(long long)r * cols + c] = in[(long long)r * cols + c];\n", None,
     "both sides of the copy are contiguous in c"),
    ("    for (int i = 0; i < 2; ++i) out[c * rows + r] = in[r * cols + c];\n", None, "a `for` statement"),
    ("    out[c * rows + r] = in[r * cols + c] * 2.0f;\n", None, "only thread-index declarations"),
    ("    out[c * rows + r] = in[(r + 1) * cols + c];\n", None, "is nested inside"),
    ("    out[c * rows + r] = in[r * cols + c];\n", "rows // 8 + 1", "does not name BLOCK_Y"),
])
def test_tiled_transpose_refuses_other_shapes(body: str, grid_y: str | None, why: str) -> None:
    got = apply(_naive(body, grid_y or "(rows + BLOCK_Y - 1) // BLOCK_Y"), "cuda_tiled_transpose")
    assert isinstance(got, Refused) and why in got.reason, got


def test_tiled_transpose_reads_an_early_return_guard(tmp_path: Path, compiler) -> None:
    src = _naive("    if (r >= rows || c >= cols) return;\n    out[(long long)c * rows + r] = in[(long long)r * cols + c];\n")
    cand, got = candidate(SUITE, "cuda_tiled_transpose", tmp_path, source=src)
    assert "if (!(r >= rows || c >= cols)) kp_tile[kp_j][threadIdx.x]" in got.source
    assert "return" not in got.source.split("CUDA_SOURCE")[1].split('"""')[1]  # no return before __syncthreads
    assert re.search(r"\bld\.shared", build(compiler, cand).ptx)
