"""The decomposer's `decomposer.analyze` endpoint on a real nats-server, asked by the planner's BusIO.

Artifacts form: a real TTGIR fixture (tests/fixtures/ttgir, captured by tests/fixtures/capture_ttgir.py)
in, a Decomposition out. Task form without a toolrunner on the bus: an `unavailable` error, which the
planner turns into "no diagnosis" (None) instead of failing the job.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from services.decomposer.service import setup
from services.planner.bus_io import BusIO
from shared.messages import ToolRequest, ToolResult
from shared.service import ServiceRuntime
from shared.subjects import DECOMPOSER_ANALYZE
from shared.tools.decompose import Decomposition

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "ttgir"


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
