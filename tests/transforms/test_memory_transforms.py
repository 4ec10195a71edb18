"""Memory transformations on Triton tasks: tiled_transpose on a fresh one-row-per-program transpose (a
strided store) and on its column-reading twin (a strided load): the candidate is correct in Triton's
interpreter at sizes that are not multiples of the tile, and compiled for cuda:90 its strided side is
gone (the decomposer's finding, the PTX's shared-memory staging and wide global accesses)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shared.transforms.base import Refused
from shared.transforms.table import apply
from tests.transforms.harness import ROOT, build, candidate, correct, make_compiler

ROWS = "tests/transforms/tasks/transpose_rows.py"
STRIDED = {"uncoalesced_strided_access", "transposed_access_no_staging"}


@pytest.fixture(scope="module")
def compiler(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return make_compiler(tmp_path_factory.mktemp("kpilot-compile"))


def _column_read() -> str:
    """The same transpose reading x down a column (`offs * rows + row`) and writing y's row contiguously."""
    src = (ROOT / ROWS).read_text()
    for old, new in (("v = tl.load(x_ptr + row * cols + offs, mask=mask)", "v = tl.load(x_ptr + offs * cols + row, mask=mask)"),
                     ("tl.store(y_ptr + offs * rows + row, v, mask=mask)", "tl.store(y_ptr + row * rows + offs, v, mask=mask)"),
                     ("mask = offs < cols", "mask = offs < rows"),
                     ("grid = (rows, triton.cdiv(cols, BLOCK))", "grid = (cols, triton.cdiv(rows, BLOCK))")):
        assert old in src
        src = src.replace(old, new)
    return src


@pytest.mark.parametrize("side", ["store", "load"])
def test_tiled_transpose_is_correct_and_coalesces_the_strided_side(tmp_path: Path, compiler, side: str) -> None:
    src = (ROOT / ROWS).read_text() if side == "store" else _column_read()
    base = tmp_path / f"naive_{side}.py"
    base.write_text(src)
    cand, got = candidate(ROWS, "tiled_transpose", tmp_path, source=src)
    assert "tl.trans(" in got.source and "TILE: tl.constexpr" in got.source
    assert "triton.cdiv(rows, TILE)" in got.source or "triton.cdiv(cols, TILE)" in got.source
    for tile in (16, 32):  # micro 50 x 70 and edges 1 x 1, 37 x 129: partial tiles on both sides
        out = correct(base, cand, {"BLOCK": 64, "TILE": tile})
        assert out.passed, out.summary
    before, after = build(compiler, base), build(compiler, cand)
    assert STRIDED & set(before.patterns), before.patterns
    assert not STRIDED & set(after.patterns), after.patterns
    strided = "st" if side == "store" else "ld"
    assert not re.search(r"\b(ld|st)\.shared|ldmatrix|stmatrix", before.ptx)
    assert not re.search(rf"\b{strided}\.global\.v[24]", before.ptx)  # one 4-byte access per lane
    # staged through shared memory (st.shared or stmatrix, read back by ld.shared or ldmatrix), both global
    # sides 16 B per lane
    assert re.search(r"\bst\.shared|\bstmatrix", after.ptx) and re.search(r"\bld\.shared|\bldmatrix", after.ptx)
    assert re.search(r"\bld\.global\.v4", after.ptx) and re.search(r"\bst\.global\.v4", after.ptx)
    again = apply(got.source, "tiled_transpose")
    assert isinstance(again, Refused) and "calls ['trans']" in again.reason


@pytest.mark.parametrize(("old", "new", "why"), [
    ("tl.store(y_ptr + offs * rows + row, v, mask=mask)", "tl.store(y_ptr + row * cols + offs, v, mask=mask)",
     "a transpose has offs bare on one side"),
    ("    v = tl.load(x_ptr + row * cols + offs, mask=mask)\n",
     "    v = tl.load(x_ptr + row * cols + offs, mask=mask)\n    v = v + tl.sum(v, axis=0)\n",
     "calls ['sum']"),
    ("    mask = offs < cols\n", "    mask = offs < cols\n    if row > rows:\n        return\n", "has a `if` block"),
    ("tl.store(y_ptr + offs * rows + row, v, mask=mask)", "tl.store(y_ptr + offs * rows + row + row, v, mask=mask)",
     "in 2 additive terms"),
    ("grid = (rows, triton.cdiv(cols, BLOCK))", "grid = lambda meta: (rows, triton.cdiv(cols, meta['BLOCK']))",
     "is not a tuple literal"),
])
def test_tiled_transpose_refuses_other_kernels(old: str, new: str, why: str) -> None:
    src = (ROOT / ROWS).read_text()
    assert old in src
    got = apply(src.replace(old, new), "tiled_transpose")
    assert isinstance(got, Refused) and why in got.reason, got


def test_tiled_transpose_refuses_suite_kernels_without_the_pattern() -> None:
    for task in ("benchmarks/tasks/l1_gelu.py", "examples/matmul.py"):
        got = apply((ROOT / task).read_text(), "tiled_transpose")
        assert isinstance(got, Refused), task
