"""l2_matmul_irregular's former PAD_ALIGN=1 variant, now reached by `aligned_copies extents=1` from the
stripped task, compiled for cuda:90 by the compile tool on CPU at the full shape (5003 x 4001 @ 4001 x
6007): what the variant's docstring claimed about Triton's specialization and the PTX holds for the
candidate.

Padded, K, N and the row strides are specialized as divisible by 16 and every operand load is a 16-byte
cp.async; unpadded, the odd K leaves A's and B's loads at 2 bytes each (ld.global.b16) with no cp.async at
all. Whether that is faster is a GPU question (the suite rows and the exhaustive table answer it; the
recorded H200 rows under benchmarks/results name the old PAD_ALIGN knob).
"""

from __future__ import annotations

import re

import pytest

from benchmarks.suite import TASKS_DIR
from services.toolrunner.artifacts import LocalArtifactStore, LocalResultCache
from services.toolrunner.tools.compile.spec import Compiler
from shared.tools.compile import CompileInput
from shared.transforms.base import Applied
from shared.transforms.table import apply

TASK = TASKS_DIR / "l2_matmul_irregular.py"
TILE = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 4}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[dict[str, bool], str]]:
    root = tmp_path_factory.mktemp("pad-align")
    compiler = Compiler(store=LocalArtifactStore(root / "artifacts"), cache=LocalResultCache(root / "cache"))
    got = apply(TASK.read_text(), "aligned_copies", {"extents": 1, "align": 64})
    assert isinstance(got, Applied), got
    cand = root / "l2_matmul_irregular_aligned.py"
    cand.write_text(got.source)
    out = {}
    for pad, path in ((0, TASK), (1, cand)):
        res = compiler.run(CompileInput(task_path=str(path), config=TILE))
        out[pad] = ({p.name: p.divisible_by_16 for p in res.params}, compiler.text(res, "ptx"))
    return out


def test_padding_makes_the_extents_and_the_row_strides_divisible_by_16(compiled) -> None:
    for name in ("K", "N", "stride_am", "stride_bk", "stride_cm"):
        assert compiled[1][0][name] and not compiled[0][0][name], name
    assert not compiled[1][0]["M"]  # rows are never walked across a vector: M stays as it is


def test_padded_operand_loads_are_16_byte_cp_async(compiled) -> None:
    padded, plain = compiled[1][1], compiled[0][1]
    assert re.search(r"cp\.async\.cg\.shared\.global \[[^\]]*\], \[[^\]]*\], 0x10", padded)
    assert "ld.global.b16" not in padded
    assert "cp.async" not in plain and "ld.global.b16" in plain
    assert "wgmma.mma_async" in padded and "wgmma.mma_async" in plain
