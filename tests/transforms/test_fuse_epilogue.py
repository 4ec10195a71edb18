"""fuse_epilogue on a two-kernel task (tests/transforms/tasks/matmul_then_gelu.py: a GEMM that stores C, then
a GELU kernel that reads C back): the candidate launches one kernel, passes the interpreter on micro and
edge shapes, and the decomposer's missed_fusion_elementwise on the GELU kernel has nothing left to name."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from services.decomposer.analyze import artifacts_from
from services.decomposer.decompose import decompose
from services.planner.context import PlannerContext, read_task
from services.planner.policies.rules import RulesPolicy
from services.toolrunner.tasks import load_task_cached
from services.toolrunner.tools.launch_grid.spec import run as launch_grid
from shared.tools.compile import CompileInput
from shared.tools.decompose import Finding, TaskFacts
from shared.tools.grid import LaunchGridInput
from shared.transforms.base import Refused
from shared.transforms.table import apply
from tests.transforms.harness import ROOT, candidate, correct, make_compiler

TASK = "tests/transforms/tasks/matmul_then_gelu.py"
SMALL = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 1, "num_warps": 1}  # the candidate has no BLOCK


def test_fuse_epilogue_is_one_launch_and_correct(tmp_path: Path) -> None:
    cand, got = candidate(TASK, "fuse_epilogue", tmp_path)
    assert "x = c.to(tl.float32)" in got.source and "tl.store(c_ptrs, y.to(c_ptr.dtype.element_ty)" in got.source
    assert "# exact GELU in fp32" in got.source  # the consumer's comment travels with its statement
    assert "gelu_kernel[" not in got.source and "KERNELS = (matmul_kernel,)" in got.source
    assert "def launch(inputs, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages):" in got.source
    assert '"BLOCK": ' not in got.source  # the dead knob is gone from CONFIG and SPACE
    before = launch_grid(LaunchGridInput(task_path=str(ROOT / TASK), shape="micro"))
    after = launch_grid(LaunchGridInput(task_path=str(cand), shape="micro"))
    assert before.results[0].kernels == ["matmul_kernel", "gelu_kernel"]
    assert after.results[0].kernels == ["matmul_kernel"]
    out = correct(TASK, cand, SMALL)  # micro 64 x 96 x 80; edge 257 x 131 x 77 and 1 x 1 x 1
    assert out.passed, out.summary


def test_the_consumer_had_the_pattern_it_answers(tmp_path: Path,
                                                 tmp_path_factory: pytest.TempPathFactory) -> None:
    compiler = make_compiler(tmp_path_factory.mktemp("kpilot-compile"))

    def findings(path: Path, kernel: str) -> list[str]:
        out = compiler.run(CompileInput(task_path=str(path), config={}, include_text=True, kernel=kernel))
        facts = TaskFacts(kernels_in_task=len(load_task_cached(str(path)).kernels))  # as analyze.facts_from
        return [f.pattern for f in decompose(artifacts_from(msgspec.to_builtins(out), None), facts).findings]
    assert "missed_fusion_elementwise" in findings(ROOT / TASK, "gelu_kernel")
    cand, _ = candidate(TASK, "fuse_epilogue", tmp_path)
    assert len(load_task_cached(str(cand)).kernels) == 1  # nothing left to fuse
    assert "missed_fusion_elementwise" not in findings(cand, "matmul_kernel")


def test_fuse_epilogue_refusals_name_what_is_missing() -> None:
    src = (ROOT / TASK).read_text()
    got = apply(src.replace("    y = torch.empty_like(c)\n", "    y = torch.empty((M, N), device=a.device, dtype=torch.float32)\n"),
                "fuse_epilogue")
    assert isinstance(got, Refused) and "y is not `torch.empty_like(c)`" in got.reason
    got = apply(src.replace("    return y\n", "    return y, c\n", 1), "fuse_epilogue")
    assert isinstance(got, Refused) and "c is used outside the two launches" in got.reason
    scaled = src.replace("    y = 0.5 * x * (1.0", "    y = 0.5 * x * (offs + 1.0")
    got = apply(scaled, "fuse_epilogue")
    assert isinstance(got, Refused) and "uses offs (an index or a parameter)" in got.reason
    got = apply((ROOT / "benchmarks/tasks/l2_bmm.py").read_text(), "fuse_epilogue")
    assert isinstance(got, Refused) and "no producer launch followed" in got.reason
    got = apply((ROOT / "benchmarks/tasks/l3_pipeline.py").read_text(), "fuse_epilogue")
    assert isinstance(got, Refused) and "o is not `torch.empty_like(x)`" in got.reason  # attention is no map
    once = apply(src, "fuse_epilogue")
    assert isinstance(apply(once.source, "fuse_epilogue"), Refused)  # type: ignore[union-attr]


def test_the_rules_policy_proposes_it_for_a_missed_fusion() -> None:
    src = (ROOT / TASK).read_text()
    ctx = PlannerContext(kernel="gelu_kernel", kernel_class="elementwise", task=read_task(str(ROOT / TASK), src),
                         has_dot=False, findings=[Finding(pattern="missed_fusion_elementwise", severity="high",
                                                          score=0.7, locations=["matmul_then_gelu.py:63"])])
    plan = RulesPolicy().plan(ctx)
    assert any(c.transform == "fuse_epilogue" for p in plan.candidates for c in p.changes), plan.analysis
