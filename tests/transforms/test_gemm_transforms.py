"""GEMM transformations on the straightforward batched GEMM (benchmarks/tasks/l2_bmm.py: row-major tile
order, an unpipelined K loop): the candidates pass the interpreter on micro and edge shapes, and the
decomposer's findings for what each answers are gone from the cuda:90 build."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shared.transforms.base import Refused
from shared.transforms.table import apply
from tests.transforms.harness import ROOT, build, candidate, correct, make_compiler

BMM = "benchmarks/tasks/l2_bmm.py"
# tiles small enough that the micro shape (m 40, n 48) has 3 x 3 tiles: GROUP_M 2 leaves a tail group
SMALL = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 1}


@pytest.fixture(scope="module")
def compiler(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return make_compiler(tmp_path_factory.mktemp("kpilot-compile"))


@pytest.fixture(scope="module")
def baseline(compiler):  # type: ignore[no-untyped-def]
    return build(compiler, BMM)


def test_grouped_order_is_correct_and_answers_poor_l2_reuse(tmp_path: Path, compiler, baseline) -> None:
    cand, got = candidate(BMM, "grouped_order", tmp_path)
    assert "GROUP_M: tl.constexpr" in got.source and '"GROUP_M": [1, 4, 8, 16]' in got.source
    out = correct(BMM, cand, SMALL | {"GROUP_M": 2})
    assert out.passed, out.summary
    assert "poor_l2_reuse_no_grouped_order" in baseline.patterns
    built = build(compiler, cand)
    assert "poor_l2_reuse_no_grouped_order" not in built.patterns
    assert "min.s32" in built.ptx and "min.s32" not in baseline.ptx  # the group-size clamp


def test_k_pipeline_is_correct_and_brings_cp_async(tmp_path: Path, compiler, baseline) -> None:
    cand, got = candidate(BMM, "k_pipeline", tmp_path, {"stages": 3})
    assert "tl.range(0, K, BLOCK_K, num_stages=LOOP_STAGES)" in got.source
    out = correct(BMM, cand, SMALL)
    assert out.passed, out.summary
    assert "k_loop_not_pipelined" in baseline.patterns and "cp.async" not in baseline.ptx
    built = build(compiler, cand)  # the launch keeps num_stages=1: the loop's own stages do it
    assert "k_loop_not_pipelined" not in built.patterns
    assert "cp.async" in built.ptx


def test_transforms_stack_and_keep_the_comments(tmp_path: Path) -> None:
    src = (ROOT / BMM).read_text()
    one = apply(src, "grouped_order")
    two = apply(one.source, "k_pipeline")  # type: ignore[union-attr]
    assert not isinstance(two, Refused)
    assert "# Hopper-sized space (issue #8's exhaustive sweep" in two.source
    assert '"GROUP_M": 8' in two.source and '"LOOP_STAGES": 3' in two.source
    again = apply(two.source, "grouped_order")
    assert isinstance(again, Refused) and "already computes a grouped order" in again.reason
    assert isinstance(apply(two.source, "k_pipeline"), Refused)


def test_grouped_order_refusals_name_what_is_missing() -> None:
    got = apply((ROOT / "examples/matmul.py").read_text(), "grouped_order")
    assert isinstance(got, Refused) and "already computes a grouped order" in got.reason
    got = apply((ROOT / "benchmarks/tasks/l1_gelu.py").read_text(), "grouped_order")
    assert isinstance(got, Refused) and "pid_m = pid // Q" in got.reason
    src = (ROOT / BMM).read_text().replace("grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N), B)",
                                           "grid = (triton.cdiv(M * N, BLOCK_M * BLOCK_N) + 1, B)")
    got = apply(src, "grouped_order")
    assert isinstance(got, Refused) and "product of the tile counts" in got.reason
    got = apply((ROOT / BMM).read_text(), "grouped_order", {"group_m": 3})
    assert isinstance(got, Refused) and "outside its domain" in got.reason


def test_k_pipeline_refuses_a_kernel_without_a_loop() -> None:
    got = apply((ROOT / "benchmarks/tasks/l1_gelu.py").read_text(), "k_pipeline")
    assert isinstance(got, Refused) and "no `for ... in range(...)` loop" in got.reason


def _sliced_bmm() -> str:
    """l2_bmm with A a K-slice of a 64-aligned buffer: K = 1000 is odd for the mask but every row stride
    is a multiple of 16 elements (the case of a tensor-parallel shard or a padded activation)."""
    src = (ROOT / BMM).read_text()
    src = src.replace(
        'a = torch.randn(shape["b"], shape["m"], shape["k"], device=device, dtype=dtype)',
        'kpad = -(-shape["k"] // 64) * 64\n'
        '    a = torch.randn(shape["b"], shape["m"], kpad, device=device, dtype=dtype)[:, :, : shape["k"]]')
    src = src.replace('"full": {"b": 64, "m": 1024, "n": 1024, "k": 1024}', '"full": {"b": 8, "m": 1024, "n": 1024, "k": 1000}')
    assert "kpad" in src and '"k": 1000' in src
    return src


def test_even_k_unmasks_the_interior_and_keeps_a_masked_tail(tmp_path: Path, compiler) -> None:
    import re
    task = tmp_path / "sliced_bmm.py"
    task.write_text(_sliced_bmm())
    cand, got = candidate(str(task), "even_k", tmp_path, source=task.read_text())
    assert "for k in range(0, K - K % BLOCK_K, BLOCK_K):" in got.source and "if K % BLOCK_K != 0:" in got.source
    out = correct(task, cand, SMALL)  # micro k = 32 (no tail), edge k = 1 and 65 (tail only, tail + 4 tiles)
    assert out.passed, out.summary
    base, built = build(compiler, task), build(compiler, cand)

    def vec(ptx: str) -> int:
        return len(re.findall(r"ld\.global(?:\.\w+)*\.v[24]\.", ptx))
    assert vec(built.ptx) > vec(base.ptx), (vec(base.ptx), vec(built.ptx))
    again = apply(got.source, "even_k")
    assert isinstance(again, Refused) and "whose loads mask the tile" in again.reason


IRREGULAR = "benchmarks/tasks/l2_matmul_irregular.py"


def test_aligned_copies_then_even_k_vectorise_the_odd_k_gemm(tmp_path: Path, compiler) -> None:
    import re
    one = apply((ROOT / IRREGULAR).read_text(), "aligned_copies", {"align": 64})
    assert not isinstance(one, Refused), one
    assert "a = aligned_rows(a, 64)" in one.source and "b = aligned_rows(b, 64)" in one.source
    two = apply(one.source, "even_k")
    assert not isinstance(two, Refused), two
    cand = tmp_path / "irregular_aligned_even_k.py"
    cand.write_text(two.source)
    out = correct(IRREGULAR, cand, SMALL | {"GROUP_M": 1})  # micro 67 x 45 x 51, 3 edges
    assert out.passed, out.summary

    def vec(ptx: str) -> int:
        return len(re.findall(r"ld\.global(?:\.\w+)*\.v[24]\.", ptx))
    base, built = build(compiler, IRREGULAR), build(compiler, cand)
    assert vec(base.ptx) == 0 and vec(built.ptx) > 0  # A's interior tiles: K-contiguous 16 B loads
    again = apply(one.source, "aligned_copies")
    assert isinstance(again, Refused) and "already defines aligned_rows" in again.reason
    got = apply((ROOT / "benchmarks/tasks/l1_gelu.py").read_text(), "aligned_copies")
    assert isinstance(got, Refused) and "together with `t.stride(0)`" in got.reason


@pytest.mark.parametrize("then", [[], ["even_k"]])
def test_aligned_extents_reproduce_the_removed_pad_align_variant(tmp_path: Path, then: list[str]) -> None:
    """l2_matmul_irregular's former PAD_ALIGN=1 (zero-padded A to M x K', B to K' x N', no masks across the
    padded dims) from the stripped task: aligned_copies extents=1 rounds K and N up and hands the kernel
    views into zero buffers; correct in the interpreter at micro 67 x 45 x 51 and the edges (1 x 1 x 1,
    257 x 131 x 77, 3 x 200 x 300), with tiles that leave partial K and N tiles. Its PTX is
    tests/benchmarks/test_irregular_pad_align.py's."""
    got = apply((ROOT / IRREGULAR).read_text(), "aligned_copies", {"extents": 1, "align": 64})
    assert not isinstance(got, Refused), got
    assert "K_aligned = -(-K // 64) * 64" in got.source and "c = aligned_extents(c, 64, copy=False)" in got.source
    src = got.source
    for name in then:
        nxt = apply(src, name)
        assert not isinstance(nxt, Refused), nxt
        src = nxt.source
    cand = tmp_path / "irregular_extents.py"
    cand.write_text(src)
    for cfg in ({"BLOCK_K": 16}, {"BLOCK_K": 32, "BLOCK_N": 32}):
        out = correct(IRREGULAR, cand, SMALL | {"GROUP_M": 1} | cfg)
        assert out.passed, out.summary


def test_aligned_extents_refuse_kernels_where_zeros_are_not_neutral() -> None:
    src = (ROOT / IRREGULAR).read_text()
    relu = src.replace("        acc = tl.dot(a, b, acc)\n", "        a = tl.maximum(a, 0.5)\n        acc = tl.dot(a, b, acc)\n")
    assert relu != src
    got = apply(relu, "aligned_copies", {"extents": 1})
    assert isinstance(got, Refused) and "is used outside tl.dot" in got.reason, got
    got = apply((ROOT / "benchmarks/tasks/l2_matmul_bias_gelu.py").read_text(), "aligned_copies", {"extents": 1})
    assert isinstance(got, Refused), got
    plain = apply(src, "aligned_copies", {"extents": 0})  # extents=0 keeps the sizes: no helper for them
    assert not isinstance(plain, Refused) and "aligned_extents" not in plain.source


@pytest.mark.parametrize(("task", "config"), [
    ("examples/matmul.py", {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 1, "num_warps": 1,
                            "SPLIT_K": 2}),
    (BMM, SMALL | {"SPLIT_K": 4}),  # grid axis 1 is the batch: the split takes axis 2
])
def test_split_k_is_correct_and_deterministic_in_its_second_pass(tmp_path: Path, task: str, config: dict,
                                                                 compiler) -> None:
    cand, got = candidate(task, "split_k", tmp_path)
    assert "sum_slabs[(triton.cdiv(c.numel(), 1024),)](partials, c, c.numel(), SLABS=SPLIT_K, BLOCK=1024)" in got.source
    assert "atomic" not in got.source and "partials.sum(" not in got.source
    out = correct(task, cand, config)  # micro K = 80 / 32: uneven slices; edge K = 1: empty slices
    assert out.passed, out.summary
    ptx = build(compiler, cand).ptx
    assert not re.search(r"\b(atom|red)\.global", ptx)
    again = apply(got.source, "split_k")
    assert isinstance(again, Refused)


def test_split_k_refuses_an_output_it_cannot_partition() -> None:
    src = (ROOT / "examples/matmul.py").read_text().replace(
        "c = torch.empty((M, N), device=a.device, dtype=a.dtype)", "c = inputs[0].new_empty((M, N))")
    got = apply(src, "split_k")
    assert isinstance(got, Refused) and "not created there by torch.empty/zeros" in got.reason
    got = apply((ROOT / "benchmarks/tasks/l2_matmul_bias_gelu.py").read_text(), "split_k")
    assert isinstance(got, Refused) and "does not distribute over a split-K sum" in got.reason
