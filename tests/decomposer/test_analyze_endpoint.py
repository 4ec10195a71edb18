"""The decomposer's `decomposer.analyze` endpoint on a real nats-server, asked by the planner's BusIO.

Artifacts form: a real TTGIR fixture (tests/fixtures/ttgir, captured by tests/fixtures/capture_ttgir.py)
in, a Decomposition out. Task form without a toolrunner on the bus: an `unavailable` error, which the
planner turns into "no diagnosis" (None) instead of failing the job. Task form with the toolrunner served
in-process on the same nats-server: the examples are compiled for sm_90 (no GPU needed) and the analysis
carries SASS per source line, ptxas resources and the task's roofline inputs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest

from services.decomposer.service import setup
from services.planner.bus_io import BusIO
from services.toolrunner.service import setup as toolrunner_setup
from shared.bus import Bus
from shared.messages import ToolRequest, ToolResult
from shared.natsserver import EmbeddedServer
from shared.service import ServiceRuntime
from shared.subjects import DECOMPOSER_ANALYZE
from shared.tools.decompose import Decomposition
from tests.conftest import BusFactory

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "ttgir"


async def test_artifacts_and_task_forms(make_bus) -> None:
    runtime = ServiceRuntime("decomposer", await make_bus("decomposer"))
    await runtime.start()
    await setup(runtime)
    planner = await make_bus("planner")
    ttgir = (FIX / "vector_add_block1024_n4099.ttgir").read_text()
    req = ToolRequest(source="planner", tool="decompose", args={"artifacts": {"ttgir": ttgir}})
    r = await planner.request(DECOMPOSER_ANALYZE, req, ToolResult, timeout_s=30)
    assert r.ok and r.causation_id == req.id
    d = msgspec.convert(r.result, Decomposition)
    assert d.kernel and any(n.op == "tt.load" for n in d.nodes) and d.summary

    bad = await planner.request(
        DECOMPOSER_ANALYZE,
        ToolRequest(source="planner", tool="decompose", args={"nope": 1}),
        ToolResult,
        timeout_s=30,
    )
    assert not bad.ok and bad.error.code == "invalid_request"

    kv = await planner.js.key_value("jobs")
    io = BusIO(planner, kv)
    assert await io.analyze("examples/vector_add.py", {}) is None  # no toolrunner here: no diagnosis
    task = await planner.request(
        DECOMPOSER_ANALYZE,
        ToolRequest(source="planner", tool="decompose", args={"task_path": "examples/vector_add.py"}),
        ToolResult,
        timeout_s=30,
    )
    assert not task.ok and task.error.code == "unavailable"
    await runtime.micro.stop()


@pytest.fixture
async def toolrunner(
    nats_server: EmbeddedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceRuntime]:
    monkeypatch.chdir(tmp_path)  # the runner keeps its artifacts and compile cache under ./.kpilot
    bus = await Bus.connect(nats_server.url("toolrunner"), "toolrunner")
    runtime = ServiceRuntime("toolrunner", bus)
    await runtime.start()
    await toolrunner_setup(runtime)
    runtime.ready = True
    yield runtime
    runtime.stop()
    if runtime.micro is not None:
        await runtime.micro.stop()
    await bus.close()


def _lines_with(task: Path, needle: str) -> set[int]:
    return {i for i, ln in enumerate(task.read_text().splitlines(), 1) if needle in ln}


async def _analyze(planner: Bus, task: Path, config: dict | None = None) -> Decomposition:
    args = {"task_path": str(task)} | ({"config": config} if config else {})
    r = await planner.request(
        DECOMPOSER_ANALYZE,
        ToolRequest(source="planner", tool="decompose", args=args),
        ToolResult,
        timeout_s=600,
    )
    assert r.ok, r.error
    return msgspec.convert(r.result, Decomposition)


@pytest.mark.slow
async def test_task_analysis_through_the_bus_has_sass_per_line(
    toolrunner: ServiceRuntime, make_bus: BusFactory
) -> None:
    runtime = ServiceRuntime("decomposer", await make_bus("decomposer"))
    await runtime.start()
    await setup(runtime)
    planner = await make_bus("planner")

    task = ROOT / "examples" / "matmul.py"
    d = await _analyze(planner, task)  # the 32x32x32 / 4 warps start config
    assert not any("SASS" in w or "failed" in w for w in d.warnings), d.warnings
    # Rows are per (file, line): the task's lines, and Triton library code inlined into it (tl.cdiv).
    assert d.sass_lines and any(r.file == str(task) for r in d.sass_lines)
    # 32x32 tiles are too small for wgmma (64 rows per warpgroup): mma.sync, HMMA, on the tl.dot line.
    dot = {r.line for r in d.sass_lines if any(t.startswith("HMMA") for t in r.tensor_instrs)}
    assert dot and dot <= _lines_with(task, "tl.dot(")
    assert not any(t.startswith("HGMMA") for r in d.sass_lines for t in r.tensor_instrs)
    assert any(r.barriers for r in d.sass_lines)  # operands staged through shared memory between warps
    assert d.ptxas is not None and d.ptxas.registers
    # examples/matmul.py's formulas at the full shape, 8192^3: 2*M*N*K FLOP.
    assert d.roofline.flops == 2 * 8192**3 and d.roofline.bound == "compute"

    task = ROOT / "examples" / "vector_add.py"
    loads, stores = _lines_with(task, "tl.load("), _lines_with(task, "tl.store(")
    for block, bits in ((128, 32), (1024, 128)):
        # BLOCK over 4 warps: 128 -> one fp32 per thread (LDG.E, 32 bit); 1024 -> 8, two LDG.E.128 each.
        d = await _analyze(planner, task, {"BLOCK": block})
        ldg = {r.line: r.ldg_bits for r in d.sass_lines if r.ldg_bits and r.file == str(task)}
        stg = {r.line: r.stg_bits for r in d.sass_lines if r.stg_bits and r.file == str(task)}
        assert set(ldg) == loads and set(stg) == stores, (ldg, stg)
        assert {b for v in ldg.values() for b in v} == {bits} == {b for v in stg.values() for b in v}
        assert d.roofline.bound == "memory"
    await runtime.micro.stop()


@pytest.mark.slow
async def test_task_analysis_has_the_launch_grid_triton_and_cuda(
    toolrunner: ServiceRuntime, make_bus: BusFactory
) -> None:
    """The task form asks launch_grid for the task's own launch: small_grid can fire from `kpilot analyze`
    (and the planner's diagnosis, the same request), and a CUDA task without __launch_bounds__ gets its
    warps and occupancy from the launch's block, with references into the task file."""
    runtime = ServiceRuntime("decomposer", await make_bus("decomposer"))
    await runtime.start()
    await setup(runtime)
    planner = await make_bus("planner")

    # l1_col_reduce: cdiv(cols 8192, BLOCK_N 256) = 32 programs for 132 SMs.
    task = ROOT / "benchmarks" / "tasks" / "l1_col_reduce.py"
    d = await _analyze(planner, task, {"BLOCK_M": 8, "BLOCK_N": 256, "num_warps": 1})
    small = next(f for f in d.findings if f.pattern == "small_grid")
    assert "grid of 32 programs" in small.evidence[0]

    # examples/transpose_cuda.py launches 32 x 8 threads per block: 8 warps, grid 256 x 1024 at 8192^2.
    task = ROOT / "examples" / "transpose_cuda.py"
    d = await _analyze(planner, task)
    assert d.num_warps == 8 and "occupancy:" in d.summary and "waves" in d.summary, d.summary
    locs = [x for f in d.findings for x in f.locations if ".py:" in x or ".cu:" in x]
    assert locs and all(x.startswith(f"{task}:") for x in locs), locs
    store_line = next(iter(_lines_with(task, "out[(long long)c * rows + r]")))
    assert f"{task}:{store_line}" in locs
    await runtime.micro.stop()
