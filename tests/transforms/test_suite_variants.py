"""The transformations that replace two author-written switches the suite's tasks used to carry: split_k
on the column sum (was l1_col_reduce's SPLIT_M) and chunk_max on the cross-entropy row (was
l1_cross_entropy's CHUNK_MAX). On the stripped tasks the candidates pass the interpreter on micro and
edge shapes (fp32 and fp16), compile for cuda:90, and compute what the removed variants computed
(tests/transforms/tasks/removed_*.py: the task files as they were at 7de0bf2, run side by side)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from services.toolrunner.tools.honesty_probe.spec import run as honesty_probe
from services.toolrunner.tools.launch_grid.spec import run as launch_grid
from shared.parsers.ttgir import parse_ttgir
from shared.tools.decompose import TaskFacts
from shared.tools.grid import LaunchGridInput
from shared.tools.honesty import HonestyInput
from shared.transforms.base import Refused
from shared.transforms.table import apply
from tests.transforms.harness import ROOT, build, candidate, correct, make_compiler

COL = "benchmarks/tasks/l1_col_reduce.py"
CE = "benchmarks/tasks/l1_cross_entropy.py"
COL_SPLIT_M = "tests/transforms/tasks/removed_l1_col_reduce_split_m.py"
SOFTMAX = "benchmarks/tasks/l1_row_softmax.py"
CE_CHUNK_MAX = "tests/transforms/tasks/removed_l1_cross_entropy_chunk_max.py"
# small tiles so the micro shape (300 x 37) has several column blocks, uneven row slices and a tail
COL_SMALL = {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 1}


@pytest.fixture(scope="module")
def compiler(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return make_compiler(tmp_path_factory.mktemp("kpilot-compile"))


def _fp16(task: str, tmp: Path, tol: str) -> Path:
    """The task with DTYPE float16 (make_inputs reads it) and a float16 tolerance."""
    src = (ROOT / task).read_text()
    assert 'DTYPE = "float32"' in src and "TOLERANCE = {" in src
    src = src.replace('DTYPE = "float32"', 'DTYPE = "float16"').replace("TOLERANCE = {", f'TOLERANCE = {{"float16": {tol}, ', 1)
    out = tmp / f"fp16_{Path(task).name}"
    out.write_text(src)
    return out


_SIDE_BY_SIDE = """
import json, sys, importlib.util, torch
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
a, b = load(sys.argv[1], "variant"), load(sys.argv[2], "candidate")
ca, cb, shapes, tol = (json.loads(x) for x in sys.argv[3:7])
for shape in shapes:
    inputs = a.make_inputs(shape, 0, "cpu")
    want = a.launch(inputs, **(a.CONFIG | ca))
    got = b.launch(inputs, **(b.CONFIG | cb))
    torch.testing.assert_close(got, want, atol=tol[0], rtol=tol[1])
print("same", len(shapes))
"""


def _same_outputs(variant: str | Path, cand: Path, variant_cfg: dict, cand_cfg: dict, shapes: list[dict],
                  tol: tuple[float, float]) -> None:
    """Run the removed variant and the candidate on the same inputs in Triton's interpreter; their outputs
    agree to `tol` ([atol, rtol]; the sums are added in a different order)."""
    env = os.environ | {"TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", _SIDE_BY_SIDE, str(ROOT / variant), str(cand), json.dumps(variant_cfg),
                        json.dumps(cand_cfg), json.dumps(shapes), json.dumps(list(tol))],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False)
    assert p.returncode == 0 and f"same {len(shapes)}" in p.stdout, p.stderr[-3000:]


def _loop_exps(ttgir: str) -> list[str]:
    """The exponentials computed per element inside a loop (tensor-typed math.exp / math.exp2)."""
    mod = parse_ttgir(ttgir)
    return [o.name for o in mod.ops if o.name in ("math.exp", "math.exp2") and o.loops
            and o.result_type is not None and o.result_type.shape]


# ---------------------------------------------------------------- split_k on the column sum


def test_split_k_on_the_column_sum_is_correct_and_fills_the_grid(tmp_path: Path, compiler) -> None:
    cand, got = candidate(COL, "split_k", tmp_path, {"split": 8})
    assert "for start in range(k_start, k_stop, BLOCK_M):" in got.source
    assert "sum_slabs[(triton.cdiv(out.numel(), 1024),)](partials, out, out.numel(), SLABS=SPLIT_K, BLOCK=1024)" \
        in got.source and '"SPLIT_K": [1, 2, 4, 8]' in got.source
    assert "partials.sum(" not in got.source and "torch.sum(partials" not in got.source  # the reference sums with torch
    assert "# Sums of up to 16384 N(0,1) values" in got.source  # comments kept
    for cfg in (COL_SMALL | {"SPLIT_K": 8}, COL_SMALL | {"SPLIT_K": 32, "BLOCK_M": 8}, {}):
        out = correct(COL, cand, cfg)  # micro 300 rows: uneven slices; edge 1 row: 7 or 31 empty slices
        assert out.passed, (cfg, out.summary)
    (tmp_path / "fp16").mkdir()
    half = _fp16(COL, tmp_path / "fp16", "[1e-2, 1e-2]")
    out = correct(half, candidate(str(half), "split_k", tmp_path / "fp16", {"split": 8},
                                  source=half.read_text())[0], COL_SMALL | {"SPLIT_K": 8})
    assert out.passed, out.summary
    # BLOCK_N 256 on the full shape: 32 programs for 132 SMs before, 32 x 8 after
    before = launch_grid(LaunchGridInput(task_path=str(ROOT / COL), shape="full",
                                         configs=[{"BLOCK_M": 8, "BLOCK_N": 256}])).results[0]
    after = launch_grid(LaunchGridInput(task_path=str(cand), shape="full",
                                        configs=[{"BLOCK_M": 8, "BLOCK_N": 256, "SPLIT_K": 8}])).results[0]
    assert before.programs == [32] and after.programs[0] == 256  # then the second pass
    wide = {"BLOCK_M": 8, "BLOCK_N": 256, "num_warps": 1}
    base = build(compiler, COL, wide, TaskFacts(grid=before.grids[0]))
    built = build(compiler, cand, wide | {"SPLIT_K": 8}, TaskFacts(grid=after.grids[0]))
    assert "small_grid" in base.patterns and "small_grid" not in built.patterns  # 32 -> 256 programs, 132 SMs
    assert built.ptx and not re.search(r"\b(atom|red)\.global", built.ptx)  # deterministic: no atomics


def test_split_k_on_the_column_sum_reproduces_the_removed_split_m_variant(tmp_path: Path) -> None:
    cand, _ = candidate(COL, "split_k", tmp_path, {"split": 8})
    micro, edge = {"rows": 300, "cols": 37}, [{"rows": 1, "cols": 1}, {"rows": 1001, "cols": 3}]
    for split, cfg in ((8, COL_SMALL), (32, COL_SMALL | {"BLOCK_M": 8})):
        # the same row slices (cdiv(cdiv(rows, S), BLOCK_M) = cdiv(cdiv(rows, BLOCK_M), S) whole steps),
        # each summed in the same order; the partials are added by a second kernel, as col_finish_kernel did
        _same_outputs(COL_SPLIT_M, cand, cfg | {"SPLIT_M": split}, cfg | {"SPLIT_K": split}, [micro, *edge],
                      (1e-5, 1e-6))
    cfgs = [{"BLOCK_M": 16, "BLOCK_N": 64, "num_warps": 1}]  # the H200 search's pick (suite README)
    was = launch_grid(LaunchGridInput(task_path=str(ROOT / COL_SPLIT_M), shape="full",
                                      configs=[cfgs[0] | {"SPLIT_M": 32}])).results[0]
    now = launch_grid(LaunchGridInput(task_path=str(cand), shape="full", configs=[cfgs[0] | {"SPLIT_K": 32}])).results[0]
    assert was.kernels == ["col_sum_kernel", "col_finish_kernel"] and now.kernels == ["col_sum_kernel", "sum_slabs"]
    assert now.programs[0] == was.programs[0] == 4096  # 128 column blocks x 32 row slices


def test_split_k_on_the_column_sum_passes_the_honesty_probe(tmp_path: Path) -> None:
    # H200 run r40: the candidate's second pass was `torch.sum(partials, 0)`, the reference is `x.sum(0)`,
    # and the probe rejected it as "launch ran the reference's torch ops aten.sum". The second pass is a
    # Triton kernel now: two Triton launches, no torch op.
    cand, _ = candidate(COL, "split_k", tmp_path, {"split": 4})
    out = honesty_probe(HonestyInput(task_path=str(ROOT / COL), candidate_path=str(cand), config={"SPLIT_K": 4},
                                     seeds=[11, 12]))
    assert out.passed and not out.findings, out.findings
    assert out.reference_ops == ["aten.sum"]
    assert all(t.triton_launches == 2 and not t.torch_ops for t in out.trials)


def test_split_k_refuses_a_loop_that_carries_more_than_a_sum() -> None:
    got = apply((ROOT / CE).read_text(), "split_k")  # an online logsumexp: a running max and a rescaled sum
    assert isinstance(got, Refused) and "no top-level `for k in range(0, STOP, STEP)` loop adding into" in got.reason
    src = (ROOT / COL).read_text().replace("    for start in range(0, n_rows, BLOCK_M):\n",
                                           "    seen = 0\n    for start in range(0, n_rows, BLOCK_M):\n"
                                           "        seen = tl.maximum(seen, start)\n")
    got = apply(src, "split_k")
    assert isinstance(got, Refused) and "carries ['seen'] over its iterations, which is not a sum" in got.reason, got
    src = (ROOT / COL).read_text().replace("acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)",
                                           "acc = tl.full((BLOCK_M, BLOCK_N), 1.0, tl.float32)")
    got = apply(src, "split_k")
    assert isinstance(got, Refused) and "does not start at tl.zeros" in got.reason, got
    src = (ROOT / COL).read_text().replace("    total = tl.sum(acc, axis=0)",
                                           "    acc = acc * acc\n    total = tl.sum(acc, axis=0)")
    got = apply(src, "split_k")
    assert isinstance(got, Refused) and "changes the accumulator ['acc'] after the loop" in got.reason, got
    src = (ROOT / COL).read_text().replace("total.to(out_ptr.dtype.element_ty)", "tl.sqrt(total)")
    got = apply(src, "split_k")
    assert isinstance(got, Refused) and "stores more than a sum of the accumulator" in got.reason, got


def test_split_k_zero_fills_the_partials_of_a_zero_filled_output() -> None:
    """An output made by torch.zeros may be stored only in part; its partials then start at zero too, so the
    second pass adds zeros where the kernel stores nothing. An empty output keeps empty partials."""
    src = (ROOT / COL).read_text().replace("out = torch.empty(cols,", "out = torch.zeros(cols,")
    got = apply(src, "split_k")
    assert not isinstance(got, Refused) and "partials = torch.zeros((SPLIT_K, *out.shape)" in got.source
    got = apply((ROOT / COL).read_text(), "split_k")
    assert not isinstance(got, Refused) and "partials = torch.empty((SPLIT_K, *out.shape)" in got.source
    assert "sum_slabs[(triton.cdiv(out.numel(), 1024),)](partials, out, out.numel()" in got.source


# ---------------------------------------------------------------- chunk_max on the cross-entropy row


def test_chunk_max_is_correct_and_halves_the_exps_per_logit(tmp_path: Path, compiler) -> None:
    cand, got = candidate(CE, "chunk_max", tmp_path)
    assert "m_new = tl.maximum(m_chunk, tl.max(x, axis=0))  # chunk max first" in got.source
    assert "s = s * tl.exp(m_chunk - m_safe) + tl.exp(x - m_safe)" in got.source
    assert "# lanes past the end: avoid -inf - -inf" in got.source  # the author's comment stays
    for cfg in ({}, {"BLOCK_V": 256, "num_warps": 8}):  # micro vocab 500, edge 1 / 10007 / 129: tails
        out = correct(CE, cand, cfg)
        assert out.passed, (cfg, out.summary)
    (tmp_path / "fp16").mkdir()
    half = _fp16(CE, tmp_path / "fp16", "[2e-2, 2e-3]")
    out = correct(half, candidate(str(half), "chunk_max", tmp_path / "fp16", source=half.read_text())[0])
    assert out.passed, out.summary
    base, built = build(compiler, CE), build(compiler, cand)
    assert _loop_exps(base.ttgir) == ["math.exp", "math.exp"] and _loop_exps(built.ttgir) == ["math.exp"]


def test_chunk_max_applies_to_the_online_softmax_row_too(tmp_path: Path, compiler) -> None:
    """The suite's row softmax has the same first pass (running max per lane, then a second pass that
    normalises): the same rewrite, correct, one exp per element left in the first loop."""
    cand, got = candidate(SOFTMAX, "chunk_max", tmp_path)
    assert "m = tl.maximum(m, m_chunk)" in got.source
    out = correct(SOFTMAX, cand)
    assert out.passed, out.summary
    base, built = build(compiler, SOFTMAX), build(compiler, cand)
    assert len(_loop_exps(base.ttgir)) == 3 and len(_loop_exps(built.ttgir)) == 2  # 2 + 1 -> 1 + 1


def test_chunk_max_then_exp2_fold_reproduces_the_removed_chunk_max_variant(tmp_path: Path, compiler) -> None:
    one = apply((ROOT / CE).read_text(), "chunk_max")
    two = apply(one.source, "exp2_fold")  # type: ignore[union-attr]
    assert not isinstance(two, Refused), two
    cand = tmp_path / "ce_chunk_max_exp2.py"
    cand.write_text(two.source)
    out = correct(CE, cand)
    assert out.passed, out.summary
    shapes = [{"rows": 17, "vocab": 500}, {"rows": 1, "vocab": 1}, {"rows": 3, "vocab": 10007},
              {"rows": 70, "vocab": 129}]
    _same_outputs(CE_CHUNK_MAX, cand, {"CHUNK_MAX": 1}, {}, shapes, (1e-5, 1e-5))
    # one exp2 per logit in the loop, as the variant has; no tl.exp left
    variant = build(compiler, CE_CHUNK_MAX, {"CHUNK_MAX": 1})
    built = build(compiler, cand)
    assert _loop_exps(variant.ttgir) == _loop_exps(built.ttgir) == ["math.exp2"]
    assert "exp_instead_of_exp2" in build(compiler, CE).patterns and "exp_instead_of_exp2" not in built.patterns


def test_chunk_max_refusals_name_what_is_missing() -> None:
    got = apply((ROOT / "benchmarks/tasks/l1_gelu.py").read_text(), "chunk_max")
    assert isinstance(got, Refused) and "no loop keeping a per-lane running max" in got.reason, got
    once = apply((ROOT / CE).read_text(), "chunk_max")
    again = apply(once.source, "chunk_max")  # type: ignore[union-attr]
    assert isinstance(again, Refused) and "not set before the loop by a 1-D tl.full" in again.reason, again
    src = (ROOT / CE).read_text().replace("        m = m_new\n", "        m = m_new\n        s = s + m * 0.0\n")
    got = apply(src, "chunk_max")
    assert isinstance(got, Refused) and "reads the running max m other than as tl.exp(m - m_new)" in got.reason, got
    src = (ROOT / CE).read_text().replace("    row_max = tl.max(m, axis=0)\n",
                                          "    row_max = tl.max(m, axis=0)\n    tl.store(loss_ptr + row, tl.min(m, axis=0))\n")
    got = apply(src, "chunk_max")  # the lane maxima themselves after the loop: not the same values after
    assert isinstance(got, Refused) and "reads the running max m after the loop other than" in got.reason, got
    src = (ROOT / CE).read_text().replace(
        "    row_max = tl.max(m, axis=0)\n    lse = row_max + tl.log(tl.sum(s * tl.exp(m - row_max), axis=0))\n",
        "    lse = tl.log(tl.sum(s * tl.exp(m), axis=0))\n")
    got = apply(src, "chunk_max")  # lanes never reduced as one row (attention keeps a max per query row)
    assert isinstance(got, Refused) and "never combines the lanes of m after the loop" in got.reason, got
    got = apply((ROOT / "examples/attention_fwd.py").read_text(), "chunk_max")
    assert isinstance(got, Refused), got
