"""two_stage_reduce on a fresh atomic-sum kernel (tests/transforms/tasks/atomic_sum.py): correct in the
interpreter on micro and edge shapes, no atomic left in the cuda:90 PTX, atomic_contention gone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shared.transforms.base import Refused
from shared.transforms.table import apply
from tests.transforms.harness import ROOT, build, candidate, correct, make_compiler

TASK = "tests/transforms/tasks/atomic_sum.py"


@pytest.fixture(scope="module")
def compiler(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return make_compiler(tmp_path_factory.mktemp("kpilot-compile"))


def test_two_stage_reduce_is_correct_and_leaves_no_atomic(tmp_path: Path, compiler) -> None:
    cand, got = candidate(TASK, "two_stage_reduce", tmp_path)
    assert "tl.store(out_ptr + tl.program_id(0), tl.sum(x, axis=0))" in got.source
    assert "add_total[(1,)](partials, out, partials.numel(), BLOCK=1024)" in got.source
    assert "partials.sum(" not in got.source  # no torch reduction in launch: the reference may use the same op
    out = correct(TASK, cand)
    assert out.passed, out.summary
    base, built = build(compiler, TASK), build(compiler, cand)
    atom = re.compile(r"\b(atom|red)\.global")
    assert atom.search(base.ptx) and "atomic_contention" in base.patterns
    assert not atom.search(built.ptx) and "atomic_contention" not in built.patterns


def test_two_stage_reduce_refusals() -> None:
    src = (ROOT / TASK).read_text()
    got = apply(src.replace("tl.atomic_add(out_ptr, tl.sum(x, axis=0))",
                            "tl.atomic_add(out_ptr + pid % 4, tl.sum(x, axis=0))"), "two_stage_reduce")
    assert isinstance(got, Refused) and "not a pointer parameter as is" in got.reason
    got = apply(src.replace("tl.atomic_add(out_ptr, tl.sum(x, axis=0))",
                            "tl.atomic_add(out_ptr, tl.sum(x, axis=0), mask=pid < n)"), "two_stage_reduce")
    assert isinstance(got, Refused) and "has a mask" in got.reason
    got = apply(src.replace("    tl.atomic_add(out_ptr, tl.sum(x, axis=0))",
                            "    old = tl.atomic_add(out_ptr, tl.sum(x, axis=0))"), "two_stage_reduce")
    assert isinstance(got, Refused) and "uses the atomic_add's result" in got.reason
    got = apply((ROOT / "benchmarks/tasks/l1_gelu.py").read_text(), "two_stage_reduce")
    assert isinstance(got, Refused) and "0 atomics" in got.reason
