"""Block-uniform guards on real SASS (tests/fixtures/sass/uniformity, tests/fixtures/capture_uniformity_sass.py).

Run r38 on the H200 rejected every attention candidate with num_stages > 1 as "barrier(s) in divergent
code": Triton's software-pipelined loop puts its barriers behind a loop-entry guard, and the rule counted
any predicated forward branch. The guard tests the program id and the sequence length, which every
thread of a block shares; a CUDA `if (threadIdx.x ...) __syncthreads()` does not.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from services.verifier.static_checks import conditional_barriers, hazard_findings
from services.verifier.uniformity import block_uniform_guards
from shared.parsers.sass import kernels_from_text
from shared.tools.inspect import SassKernel

SASS = Path(__file__).resolve().parents[1] / "fixtures" / "sass"


def kernel(case: str, folder: str = "uniformity") -> SassKernel:
    (k,) = kernels_from_text(((SASS / folder) if folder else SASS).joinpath(f"{case}.cuobjdump.sass").read_text())
    return k


def guards(k: SassKernel) -> dict[int, bool]:
    uniform = block_uniform_guards(k)
    return {
        i.addr: i.addr in uniform
        for i in k.instructions
        if i.predicate and i.opcode.split(".")[0] in ("BRA", "BAR")
    }


def test_the_pipelined_attention_loop_guard_is_block_uniform_so_its_barriers_are_not_divergent() -> None:
    k = kernel("attention_pipelined")
    # @P3 BRA over the loop: P3 <- PLOP3(UP0) <- UISETP(UR33) <- R2UR(R29) <- program id and arguments.
    assert guards(k) == {0x1670: True, 0x3990: True}
    assert sum(i.opcode.startswith("BAR") for i in k.instructions) == 6
    assert conditional_barriers(k) == []
    parent = kernel("attention_unpipelined")
    assert [f.reason for f in hazard_findings(k, parent, k, parent) if "divergent" in f.reason] == []


def test_a_loop_bound_loaded_from_a_block_uniform_address_stays_uniform() -> None:
    # Block-sparse attention walks a LUT: the loop count is a scalar tl.load at an address made of the
    # program id. Its epilogue's per-thread store guards (@P4) stay varying.
    g = guards(kernel("block_sparse_pipelined"))
    assert g[0x18A0] and g[0x3920]
    assert not any(g[a] for a in (0x50E0, 0x5140, 0x51D0))
    assert conditional_barriers(kernel("block_sparse_pipelined")) == []


def test_a_barrier_under_a_thread_index_test_is_divergent() -> None:
    k = kernel("transpose_divergent_barrier")
    assert guards(k)[0x300] is False  # @!P0 BAR.SYNC, P0 from threadIdx and the bounds
    assert [i.addr for i in conditional_barriers(k)] == [0x300]
    (f,) = [f for f in hazard_findings(k, kernel("attention_unpipelined"), k) if "divergent" in f.reason]
    assert f.hazard and f.reason.startswith("needs human review: 1 barrier(s) in divergent code")


def test_per_element_guards_around_atomics_are_varying() -> None:
    k = kernel("histogram_kernel", folder="")
    assert guards(k) and not any(guards(k).values())


def test_a_guard_computed_from_the_thread_index_is_varying_even_through_uniform_looking_arithmetic() -> None:
    # Rewire the pipelined loop guard's source to SR_TID.X: the same chain must now be varying.
    k = kernel("attention_pipelined")
    s2r = [i for i in k.instructions if i.opcode == "S2R" and i.operands[1] == "SR_CTAID.X"]
    assert s2r
    tampered = msgspec.structs.replace(
        k,
        instructions=[
            msgspec.structs.replace(i, operands=[i.operands[0], "SR_TID.X"]) if i in s2r else i
            for i in k.instructions
        ],
    )
    assert guards(tampered)[0x1670] is False
    assert len(conditional_barriers(tampered)) >= 1
