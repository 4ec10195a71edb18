"""The funnel's concurrency keeps the isolation rules: a tool that runs user code (load_task, compile,
run_correctness, honesty_probe, bench, bench_ab) never overlaps another call, with two exceptions: the
static layer's inspections of already-compiled binaries (ptxas_info, sass) run together, and the micro
layer's correctness run and honesty probe run beside each other (each in its own sandboxed process; they
share the GPU and time nothing, as the toolrunner already runs them for two candidates at once:
services/toolrunner/call_slots.py). A timing (bench, bench_ab) never overlaps anything. When several calls
fail, the reason is the first failure in the layer's own order, as if they had run one by one.

Real tools through the in-process client (vector_add on Triton's interpreter); the recording client only
notes when each call starts and ends, and the second test replaces two answers with errors.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from services.toolrunner.registry import local_executor
from services.verifier.funnel import VerifyJob, verify
from shared.messages import ToolError, ToolResult
from shared.toolclient import InProcessToolClient

ROOT = Path(__file__).resolve().parents[2]
TASK = str(ROOT / "examples" / "vector_add.py")
INSPECTIONS = ("ptxas_info", "sass")  # read compiled binaries only: no user code runs in their workers
SHARING = ("run_correctness", "honesty_probe")  # sandboxed, share the GPU, time nothing


def _may_overlap(a: str, b: str) -> bool:
    return (a in INSPECTIONS and b in INSPECTIONS) or {a, b} == set(SHARING)


class Recording:
    def __init__(self, fail: dict[tuple[str, str], float] | None = None) -> None:
        self.inner = InProcessToolClient(local_executor(), source="test")
        self.spans: list[tuple[str, dict[str, Any], float, float]] = []
        self.fail = fail or {}  # (tool, disassembler or "") -> seconds before the injected error

    async def call(self, tool: str, args: dict[str, Any], *, job_id: str | None = None,
                   causation_id: str | None = None) -> ToolResult:
        start = time.perf_counter()
        delay = self.fail.get((tool, args.get("disassembler", "")))
        if delay is not None:
            await asyncio.sleep(delay)
            res = ToolResult(
                source="test", tool=tool, tool_version="", ok=False,
                error=ToolError(code="failed", message=f"injected {tool} failure"),
            )
        else:
            res = await self.inner.call(tool, args, job_id=job_id, causation_id=causation_id)
        self.spans.append((tool, args, start, time.perf_counter()))
        return res


def test_calls_that_run_user_code_never_overlap_another_call() -> None:
    client = Recording()
    verdicts = asyncio.run(
        verify(VerifyJob(candidate_id="order", task_path=TASK, config={"BLOCK": 1024}), client)
    )
    assert [(v.layer, v.status) for v in verdicts][:2] == [("static", "pass"), ("micro", "pass")], [
        v.reasons for v in verdicts
    ]
    tools = [t for t, *_ in client.spans]
    assert tools.count("compile") == 2 and tools.count("sass") == 4 and tools.count("ptxas_info") == 2
    for i, (tool, _, start, end) in enumerate(client.spans):
        for j, (other, _, o_start, o_end) in enumerate(client.spans):
            overlap = start < o_end and o_start < end
            if i != j and overlap:
                assert _may_overlap(tool, other), (tool, other)
    inspections = [(s, e) for t, _, s, e in client.spans if t in INSPECTIONS]
    last_compile_end = max(e for t, _, _, e in client.spans if t == "compile")
    assert min(s for s, _ in inspections) >= last_compile_end
    # They did run together (the point of the change): some two of the six overlap.
    assert any(a < d and c < b for k, (a, b) in enumerate(inspections) for c, d in inspections[k + 1 :])
    # and the probe ran beside the correctness run, both before the micro timing
    (c0, c1), (h0, h1) = (next((s, e) for t, _, s, e in client.spans if t == name) for name in SHARING)
    assert c0 < h1 and h0 < c1
    bench_start = min(s for t, _, s, _ in client.spans if t == "bench")
    assert max(c1, h1) <= bench_start


def test_with_several_failures_the_reason_is_the_first_in_the_layers_order() -> None:
    # Both cuobjdump passes fail at once, both ptxas_info calls a second later; one by one, the
    # candidate's ptxas_info (the first of the six) is the failure that would have been seen.
    client = Recording(fail={("sass", "cuobjdump"): 0.0, ("ptxas_info", ""): 1.0})
    verdicts = asyncio.run(
        verify(VerifyJob(candidate_id="order-fail", task_path=TASK, config={"BLOCK": 1024}), client)
    )
    assert [(v.layer, v.status) for v in verdicts] == [("static", "fail")]
    assert verdicts[0].reasons == ["ptxas_info could not run: failed: injected ptxas_info failure"]


def test_a_correctness_failure_is_the_micro_reason_and_the_probe_beside_it_is_cancelled() -> None:
    client = Recording(fail={("run_correctness", ""): 0.0})
    verdicts = asyncio.run(
        verify(VerifyJob(candidate_id="order-micro", task_path=TASK, config={"BLOCK": 1024}), client)
    )
    assert [(v.layer, v.status) for v in verdicts] == [("static", "pass"), ("micro", "fail")]
    assert "injected run_correctness failure" in " ".join(verdicts[1].reasons), verdicts[1].reasons
    assert "honesty" not in " ".join(verdicts[1].reasons)
    tools = [t for t, *_ in client.spans]
    assert "bench" not in tools and "honesty_probe" not in tools  # cancelled before it answered
