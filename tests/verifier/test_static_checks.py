"""Layer 1's pure rules on real SASS and ptxas output (tests/decomposer/corpus, tests/fixtures/sass|ptxas).

The corpus kernels were compiled by Triton 3.6.0 for sm_90a (tests/decomposer/capture_corpus.py); the
sass fixtures by tests/fixtures/capture_sass.py, the ptxas logs by tests/fixtures/capture_ptxas.py.
"""

from __future__ import annotations

from pathlib import Path

from services.verifier.static_checks import (
    conditional_barriers,
    hazard_findings,
    local_memory_findings,
    precision_findings,
    resource_findings,
)
from shared.parsers.ptxas import parse_ptxas_v
from shared.parsers.sass import kernels_from_text
from shared.tools.inspect import SassKernel

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "decomposer" / "corpus"
SASS = ROOT / "tests" / "fixtures" / "sass"
PTXAS = ROOT / "tests" / "fixtures" / "ptxas"


def corpus(case: str) -> SassKernel:
    (k,) = kernels_from_text((CORPUS / case / "kernel.sass").read_text())
    return k


def fixture(name: str, disassembler: str = "nvdisasm") -> SassKernel:
    (k,) = kernels_from_text((SASS / f"{name}.{disassembler}.sass").read_text())
    return k


def test_tf32_dot_in_an_exact_fp32_task_is_a_precision_downgrade_with_the_hgmma_lines() -> None:
    found = precision_findings(corpus("clean_matmul_tf32"), corpus("matmul_fp32_ieee"), "exact", "float32")
    (f,) = found
    assert "precision downgrade: dot inputs HGMMA.64x128x8.F32.TF32" in f.reason
    assert "fp32 FFMA" in f.reason and not f.hazard
    assert len(f.lines) == 4 and all("HGMMA.64x128x8.F32.TF32" in ln for ln in f.lines)


def test_tf32_is_allowed_when_the_task_says_allow_tf32() -> None:
    assert (
        precision_findings(corpus("clean_matmul_tf32"), corpus("matmul_fp32_ieee"), "allow_tf32", "float32")
        == []
    )


def test_the_same_bf16_dot_under_another_tiling_is_not_a_downgrade() -> None:
    # matmul_spills is 256x256x64 with HGMMA.64x256x16.F32.BF16; clean_matmul_bf16 128x128x64.
    assert precision_findings(corpus("matmul_spills"), corpus("clean_matmul_bf16"), "exact", "bfloat16") == []


def test_new_local_memory_is_rejected_unless_the_task_allows_spills() -> None:
    (f,) = local_memory_findings(corpus("matmul_spills"), corpus("clean_matmul_bf16"), allow_spills=False)
    assert f.reason.startswith("new local memory: 2418 LDL/STL instructions (parent 0)")
    assert f.lines and ("LDL" in f.lines[0] or "STL" in f.lines[0])
    assert (
        local_memory_findings(corpus("matmul_spills"), corpus("clean_matmul_bf16"), allow_spills=True) == []
    )


def test_new_atomics_need_human_review_with_the_sass_lines() -> None:
    found = hazard_findings(fixture("histogram_kernel"), fixture("add_kernel"))
    (f,) = [f for f in found if "atomic" in f.reason]
    assert f.hazard and f.reason.startswith("needs human review: ")
    assert all("ATOMG" in ln for ln in f.lines) and len(f.lines) == len(
        [i for i in fixture("histogram_kernel").instructions if i.opcode.startswith("ATOMG")][:8]
    )


def test_a_kernel_against_itself_has_no_hazard() -> None:
    for name in ("matmul_kernel", "softmax_kernel", "histogram_kernel"):
        k, cf = fixture(name), fixture(name, "cuobjdump")
        assert hazard_findings(k, k, cf, cf) == []


def test_barriers_behind_the_pipelined_loops_block_uniform_entry_guard_are_not_conditional() -> None:
    # The pipelined matmul's loop-entry guard (@!P0 BRA) jumps over two BAR.SYNCs; it tests the K extent,
    # which every thread of the block shares, so no thread skips them (tests/verifier/test_uniformity.py
    # holds the divergent cases). Softmax's five barriers are unconditional.
    cf = fixture("matmul_kernel", "cuobjdump")
    assert sum(i.opcode.startswith("BAR") for i in cf.instructions) >= 2
    assert conditional_barriers(cf) == []
    assert conditional_barriers(fixture("softmax_kernel", "cuobjdump")) == []
    found = hazard_findings(
        fixture("matmul_kernel"), fixture("softmax_kernel"), cf, fixture("softmax_kernel", "cuobjdump")
    )
    assert not [f for f in found if "divergent" in f.reason]


def test_new_spills_from_ptxas_are_rejected_and_shared_memory_over_227_kb_too() -> None:
    spill = next(f for f in parse_ptxas_v((PTXAS / "matmul_spill.txt").read_text()).functions if f.is_entry)
    clean = next(f for f in parse_ptxas_v((PTXAS / "matmul.txt").read_text()).functions if f.is_entry)
    assert spill.spills and not clean.spills
    (f,) = resource_findings(spill, clean, None, max_registers=255, max_shared=232448, allow_spills=False)
    assert f.reason.startswith("new register spills: ")
    assert (
        resource_findings(spill, clean, None, max_registers=255, max_shared=232448, allow_spills=True) == []
    )
    # 196608 + 65536 bytes of Triton's dynamic shared memory: 256 KB > 227 KB.
    (g,) = resource_findings(clean, clean, 262144, max_registers=255, max_shared=232448, allow_spills=False)
    assert "needs 256.0 KB of shared memory per block; the H200 allows 227 KB" in g.reason
    (h,) = resource_findings(
        clean, clean, None, max_registers=clean.registers - 1, max_shared=232448, allow_spills=False
    )
    assert h.reason == f"uses {clean.registers} registers per thread; the budget is {clean.registers - 1}"
