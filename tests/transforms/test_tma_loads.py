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
