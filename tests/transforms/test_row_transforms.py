"""Row-kernel and memory transformations on the suite's straightforward L1 kernels: rows per program
(row softmax), exp2 with log2(e) folded (row softmax, and a fresh attention-style kernel with a scale),
eviction policy (GELU). Candidates pass the interpreter on micro and edge shapes; the cuda:90 build or
the launch grid shows the change."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.toolrunner.tools.launch_grid.spec import run as launch_grid
from shared.tools.grid import LaunchGridInput
from shared.transforms.base import Refused
from shared.transforms.table import apply
from tests.transforms.harness import ROOT, build, candidate, correct, make_compiler

SOFTMAX = "benchmarks/tasks/l1_row_softmax.py"
GELU = "benchmarks/tasks/l1_gelu.py"


@pytest.fixture(scope="module")
def compiler(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return make_compiler(tmp_path_factory.mktemp("kpilot-compile"))


def test_rows_per_program_is_correct_with_a_tail_and_shrinks_the_grid(tmp_path: Path, compiler) -> None:
    cand, got = candidate(SOFTMAX, "rows_per_program", tmp_path, {"rows": 4})
    assert "for row_in_program in tl.static_range(ROWS):" in got.source
    out = correct(SOFTMAX, cand)  # micro has 37 rows: the last program has one row of four
    assert out.passed, out.summary
    before = launch_grid(LaunchGridInput(task_path=str(ROOT / SOFTMAX), shape="micro")).results[0]
    after = launch_grid(LaunchGridInput(task_path=str(cand), shape="micro",
                                        configs=[{"ROWS": 1}, {"ROWS": 4}])).results
    assert before.programs == [37] and after[0].programs == [37] and after[1].programs == [10]
    assert build(compiler, cand).ptx  # builds for cuda:90


def test_rows_per_program_refusals() -> None:
    src = (ROOT / SOFTMAX).read_text().replace("    x_row = x_ptr", "    if row > 1 << 30:\n        return\n"
                                               "    x_row = x_ptr", 1)
    got = apply(src, "rows_per_program")
    assert isinstance(got, Refused) and "returns early" in got.reason
    src = (ROOT / SOFTMAX).read_text().replace("softmax_kernel[(x.shape[0],)]",
                                               "softmax_kernel[lambda meta: (x.shape[0],)]")
    got = apply(src, "rows_per_program")
    assert isinstance(got, Refused) and "not a tuple literal" in got.reason
    src = (ROOT / SOFTMAX).read_text().replace("row.to(tl.int64) * stride_out",
                                               "tl.program_id(0).to(tl.int64) * stride_out")
    got = apply(src, "rows_per_program")
    assert isinstance(got, Refused) and "2 times" in got.reason


def test_exp2_fold_on_softmax_is_correct_and_leaves_no_exp(tmp_path: Path, compiler) -> None:
    cand, got = candidate(SOFTMAX, "exp2_fold", tmp_path)
    assert "tl.exp(" not in got.source
    out = correct(SOFTMAX, cand)
    assert out.passed, out.summary
    base, built = build(compiler, SOFTMAX), build(compiler, cand)
    assert "math.exp " in base.ttgir and "math.exp " not in built.ttgir and "math.exp2" in built.ttgir


SCALED = '''
import torch
import triton
import triton.language as tl


@triton.jit
def scaled_softmax_kernel(x_ptr, out_ptr, n_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=float("-inf"))
    m = tl.max(x, axis=0)
    p = tl.exp((x - m) * scale)  # the attention idiom: the score scale inside the exponent
    tl.store(out_ptr + row * n_cols + offs, p / tl.sum(p, axis=0), mask=mask)


KERNELS = (scaled_softmax_kernel,)
CONFIG = {"BLOCK": 64, "num_warps": 1, "num_stages": 1}
SPACE = {"BLOCK": [64], "num_warps": [1, 2], "num_stages": [1]}
PRECISION = "exact"
SHAPES = {"micro": {"rows": 5, "cols": 50}, "full": {"rows": 4096, "cols": 64}, "edge": [{"rows": 1, "cols": 1}]}
DTYPE = "float32"
TOLERANCE = {"float32": [1e-6, 1e-5]}
SCALE = 0.125


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    return (torch.randn(shape["rows"], shape["cols"], device=device),)


def flops(shape):
    return 5.0 * shape["rows"] * shape["cols"]


def bytes_moved(shape):
    return 8.0 * shape["rows"] * shape["cols"]


def launch(inputs, BLOCK, num_warps, num_stages=1):
    (x,) = inputs
    out = torch.empty_like(x)
    scaled_softmax_kernel[(x.shape[0],)](x, out, x.shape[1], SCALE, BLOCK=BLOCK, num_warps=num_warps)
    return out


def reference(inputs):
    return torch.softmax(inputs[0] * SCALE, dim=1)
'''


def test_exp2_fold_hoists_the_scale_times_log2e(tmp_path: Path, compiler) -> None:
    task = tmp_path / "scaled.py"
    task.write_text(SCALED)
    cand, got = candidate(str(task), "exp2_fold", tmp_path, source=SCALED)
    assert "scale_log2e = scale * 1.4426950408889634" in got.source
    assert "tl.exp2((x - m) * scale_log2e)" in got.source
    out = correct(task, cand)
    assert out.passed, out.summary
    # tl.exp multiplies by log2(e) (0f3FB8AA3B) per element; the folded kernel multiplies once per program
    assert build(compiler, task).ptx.count("0f3FB8AA3B") > build(compiler, cand).ptx.count("0f3FB8AA3B")


def test_exp2_fold_refuses_a_kernel_without_exp() -> None:
    got = apply((ROOT / GELU).read_text(), "exp2_fold")
    assert isinstance(got, Refused) and "calls no tl.exp" in got.reason


def test_eviction_policy_is_correct_and_shows_in_ptx(tmp_path: Path, compiler) -> None:
    cand, got = candidate(GELU, "eviction_policy", tmp_path, {"policy": "evict_first"})
    out = correct(GELU, cand)
    assert out.passed, out.summary
    assert "evict_first" not in build(compiler, GELU).ptx
    assert "L1::evict_first" in build(compiler, cand).ptx
    again = apply(got.source, "eviction_policy")
    assert isinstance(again, Refused) and "no tl.load without an eviction_policy" in again.reason


def test_persistent_programs_stride_over_the_rows(tmp_path: Path) -> None:
    cand, got = candidate(SOFTMAX, "persistent", tmp_path)
    assert "for program_item in tl.range(tl.program_id(0), n_programs_total, tl.num_programs(0)):" in got.source
    assert '"PROGRAMS": [132, 264, 528]' in got.source
    # 4 programs for 37 rows (a CONFIG override below the H200 domain): every program loops 9-10 times
    out = correct(SOFTMAX, cand, {"PROGRAMS": 4}, shapes=("micro", "edge:0"))
    assert out.passed, out.summary
    grids = launch_grid(LaunchGridInput(task_path=str(cand), shape="full", configs=[{}])).results[0]
    assert grids.programs == [132]  # 8192 rows on one wave of the H200's SMs
    got = apply(got.source, "persistent")
    assert isinstance(got, Refused) and "no top-level `row = tl.program_id(0)`" in got.reason
