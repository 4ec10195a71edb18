"""tma_loads on the straightforward batched GEMM: the candidate passes Triton's interpreter (which checks a
descriptor's 16-byte alignment itself) on micro and on the odd edge shapes, compiles for cuda:90 to TMA
copies (TTGIR ttng.async_tma_copy_global_to_local, PTX cp.async.bulk.tensor), and the task is refused
where the timed shape's row pitch is odd, until aligned_copies has padded it."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.planner.context import PlannerContext, read_task
from services.planner.policies.rules import RulesPolicy
from shared.tools.decompose import Finding
from shared.transforms.base import Applied, Refused
from shared.transforms.table import apply
from tests.transforms.harness import ROOT, build, candidate, correct, make_compiler

BMM = "benchmarks/tasks/l2_bmm.py"
SMALL = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 1}


@pytest.fixture(scope="module")
def compiler(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return make_compiler(tmp_path_factory.mktemp("kpilot-compile"))


def test_tma_loads_is_correct_and_compiles_to_tma_copies(tmp_path: Path, compiler) -> None:
    cand, got = candidate(BMM, "tma_loads", tmp_path)
    assert "a = a_desc.load([pid_m * BLOCK_M, k])" in got.source and "b = b_desc.load([k, pid_n * BLOCK_N])" in got.source
    assert "a_ptrs" not in got.source and "triton.set_allocator(tma_scratch)" in got.source
    assert "# Hopper-sized space (issue #8's exhaustive sweep" in got.source  # comments kept
    # micro 3 x 40 x 48 x 32 (aligned); edge k = 1 and 65, n = 1 and 17: tma_operand pads those copies
    out = correct(BMM, cand, SMALL)
    assert out.passed, out.summary
    base, built = build(compiler, BMM), build(compiler, cand)
    assert "cp.async.bulk.tensor" not in base.ptx and "async_tma_copy" not in base.ttgir
    assert "ttng.async_tma_copy_global_to_local" in built.ttgir
    assert "cp.async.bulk.tensor" in built.ptx
    assert "k_loop_not_pipelined" in base.patterns and "k_loop_not_pipelined" not in built.patterns


def test_without_its_aligned_operands_the_interpreter_rejects_the_odd_shape(tmp_path: Path) -> None:
    """What tma_operand() is for: the same kernel handed the raw k = 65 tensors fails the descriptor's
    16-byte stride check (the interpreter's; the GPU's descriptor encoding has the same rule)."""
    _, got = candidate(BMM, "tma_loads", tmp_path)
    raw = got.source.replace("    a = tma_operand(a)\n", "")
    assert raw != got.source
    path = tmp_path / "raw.py"
    path.write_text(raw)
    out = correct(BMM, path, SMALL, shapes=("edge",))
    assert not out.passed and "16-byte aligned" in out.summary, out.summary


def test_tma_loads_refuses_an_odd_pitch_until_aligned_copies() -> None:
    got = apply((ROOT / "benchmarks/tasks/l2_matmul_irregular.py").read_text(), "tma_loads")
    assert isinstance(got, Refused) and "k = 4001 elements (8002 B)" in got.reason
    assert "apply aligned_copies first" in got.reason
    src = (ROOT / "examples/matmul.py").read_text().replace('"full": {"m": 8192, "n": 8192, "k": 8192}',
                                                          '"full": {"m": 8192, "n": 8192, "k": 8191}')
    assert '"k": 8191' in src
    got = apply(src, "tma_loads")
    assert isinstance(got, Refused) and "k = 8191" in got.reason
    padded = apply(src, "aligned_copies")
    assert isinstance(padded, Applied)
    got = apply(padded.source, "tma_loads")
    assert isinstance(got, Applied), got
    assert "a = aligned_rows(a, 64)" in got.source and "a = tma_operand(a)" in got.source
    again = apply(got.source, "tma_loads")
    assert isinstance(again, Refused) and "already loads through tensor descriptors" in again.reason
    got = apply((ROOT / "benchmarks/tasks/l1_gelu.py").read_text(), "tma_loads")
    assert isinstance(got, Refused) and "no top-level `for` loop around a tl.dot" in got.reason


def test_tma_loads_one_operand_and_the_rules_policy_proposes_it() -> None:
    got = apply((ROOT / "benchmarks/tasks/l2_matmul_square.py").read_text(), "tma_loads", {"operands": "b"})
    assert isinstance(got, Applied)
    assert "b = b_desc.load(" in got.source and "a = tl.load(a_ptrs" in got.source
    assert "b = tma_operand(b)" in got.source and "a = tma_operand(a)" not in got.source
    src = (ROOT / BMM).read_text()
    ctx = PlannerContext(kernel="bmm_kernel", kernel_class="gemm", task=read_task(str(ROOT / BMM), src),
                         has_dot=True, findings=[Finding(pattern="k_loop_not_pipelined", severity="high",
                                                         score=0.5, locations=["l2_bmm.py:46"])])
    plan = RulesPolicy().plan(ctx)
    proposed = {(c.transform, tuple(sorted(c.params.items()))) for p in plan.candidates for c in p.changes
                if c.change == "transform"}
    assert {("tma_loads", (("operands", v),)) for v in ("ab", "a", "b")} <= proposed, proposed


def _block_ptr_matmul() -> str:
    """examples/matmul.py with its A and B tiles as block pointers (tl.make_block_ptr + tl.advance), the
    other way Triton GEMMs load tiles."""
    src = (ROOT / "examples/matmul.py").read_text()
    for old, new in (
        ("    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak\n",
         ("    a_bp = tl.make_block_ptr(a_ptr, shape=(M, K), strides=(stride_am, stride_ak),\n"
         "                             offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))\n")),
        ("    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn\n",
         ("    b_bp = tl.make_block_ptr(b_ptr, shape=(K, N), strides=(stride_bk, stride_bn),\n"
         "                             offsets=(0, pid_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N), order=(1, 0))\n")),
        ("tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)",
         'tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")'),
        ("tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)",
         'tl.load(b_bp, boundary_check=(0, 1), padding_option="zero")'),
        ("        a_ptrs += BLOCK_K * stride_ak\n", "        a_bp = tl.advance(a_bp, (0, BLOCK_K))\n"),
        ("        b_ptrs += BLOCK_K * stride_bk\n", "        b_bp = tl.advance(b_bp, (BLOCK_K, 0))\n"),
    ):
        assert old in src, old
        src = src.replace(old, new)
    return src


def test_tma_loads_rewrites_block_pointers_too(tmp_path: Path, compiler) -> None:
    task = tmp_path / "matmul_block_ptr.py"
    task.write_text(_block_ptr_matmul())
    cand, got = candidate(str(task), "tma_loads", tmp_path, source=task.read_text())
    assert "a = a_desc.load([pid_m * BLOCK_M, k])" in got.source and "b = b_desc.load([k, pid_n * BLOCK_N])" in got.source
    assert "make_block_ptr" not in got.source and "tl.advance" not in got.source
    out = correct(task, cand, {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 1, "num_warps": 1})
    assert out.passed, out.summary  # micro 64 x 96 x 80; edge 257 x 131 x 77 and 3 x 200 x 300 (padded copies)
    assert "ttng.async_tma_copy_global_to_local" in build(compiler, cand).ttgir
    bad = task.read_text().replace("order=(1, 0))\n    b_bp", "order=(0, 1))\n    b_bp")
    got = apply(bad, "tma_loads")
    assert isinstance(got, Refused) and "a_bp's order is not (1, 0)" in got.reason
