"""A KernelBench problem file (examples/kernelbench_relu.py: Model, get_inputs, get_init_inputs and a
Triton ModelNew) is accepted alike by `kpilot verify` (the funnel), `kpilot analyze` (the decomposer's
task form, asked over a real nats-server with the toolrunner served in-process) and `kpilot optimize`
(the planner opens a job named after its Triton kernel; tests/capture/test_capture_e2e.py runs the
command itself against a stack)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from services.decomposer.service import setup
from services.planner.loop import Planner, kernel_of
from services.planner.policies.rules import RulesPolicy
from shared.messages import ToolRequest, ToolResult
from shared.service import ServiceRuntime
from shared.subjects import DECOMPOSER_ANALYZE
from shared.tools.decompose import Decomposition
from tests.conftest import BusFactory
from tests.decomposer.test_analyze_endpoint import toolrunner  # noqa: F401 - the fixture
from tests.planner.test_jobs_loop import MemoryIO

ROOT = Path(__file__).resolve().parents[2]
KB = ROOT / "examples" / "kernelbench_relu.py"


def test_verify_accepts_a_kernelbench_file() -> None:
    p = subprocess.run([sys.executable, "-m", "services.kpilot", "verify", str(KB), "--json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    layers = {v["layer"]: v for v in json.loads(p.stdout)}
    assert layers["static"]["status"] == "pass" and layers["micro"]["status"] == "pass", layers
    cases = next(m for m in layers["micro"]["measurements"] if m["name"] == "correctness_cases_passed")
    assert cases["value"] > 0  # ModelNew checked against Model in the interpreter, not skipped


async def test_optimize_opens_a_job_on_a_kernelbench_file(tmp_path: Path) -> None:
    assert kernel_of(str(KB)) == "relu_kernel"
    io = MemoryIO()
    s = await Planner(io, {"rules": RulesPolicy()}, tmp_path / "cands").trigger(
        kernel=kernel_of(str(KB)), task_path=str(KB), trigger_id="req-1")
    assert io.updates[0].status == "open", [u.note for u in io.updates]
    assert s.status != "failed", s.reasons  # nothing to tune by CONFIG: the job ends, it is not refused


@pytest.mark.slow
async def test_analyze_accepts_a_kernelbench_file(toolrunner: ServiceRuntime,  # noqa: F811
                                                  make_bus: BusFactory) -> None:
    runtime = ServiceRuntime("decomposer", await make_bus("decomposer"))
    await runtime.start()
    await setup(runtime)
    operator = await make_bus("planner")
    req = ToolRequest(source="planner", tool="decompose", args={"task_path": str(KB)})
    r = await operator.request(DECOMPOSER_ANALYZE, req, ToolResult, timeout_s=300)
    assert r.ok, r.error
    d = msgspec.convert(r.result, Decomposition)
    assert d.kernel == "relu_kernel" and any(n.op == "tt.load" for n in d.nodes), d.warnings
    await runtime.micro.stop()
