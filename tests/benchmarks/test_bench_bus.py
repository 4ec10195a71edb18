"""bench-bus's tool-call comparison against a real server: both responders run in a process of their
own, answer with the same bytes, and the process ends when the benchmark is done with it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from shared.natsserver import EmbeddedServer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_bus


@pytest.mark.slow
async def test_the_tool_call_comparison_runs_its_responders_in_their_own_process(
        nats_server: EmbeddedServer) -> None:
    got = await bench_bus.tool_call(nats_server.url, 5)
    assert got["calls"] == 5 and got["responders"] == "one process of their own"
    assert got["reply_bytes"] > 1000  # a compile result, cached: the same bytes on both sides
    assert 0 < got["raw_request_reply_p50"] and 0 < got["kernelpilot_cached_call_p50"]
    assert got["ratio_p50"] == got["kernelpilot_cached_call_p50"] / got["raw_request_reply_p50"]
