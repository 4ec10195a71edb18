"""Prometheus metrics (shared/metrics.py): the bus feeds them, every service serves them on /metrics, and
`kpilot status --json` names each endpoint.

The scrape test runs a real stack (`kpilot up`: nats-server and the six services as processes), one CPU
job on examples/vector_add.py (one candidate: static checks and interpreter correctness), and then reads
every service's /metrics: the planner counts the job and its candidate, the verifier the candidate at each
layer it reached, the toolrunner the tool calls it served, the critic the patch decision, and every
service the heartbeat it handled.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from shared import metrics
from shared.bus import Bus
from shared.ids import new_id
from shared.messages import Heartbeat, OptimizeRequest
from shared.natsserver import free_port
from shared.subjects import HEARTBEAT_PING, OPTIMIZE_REQUEST, SERVICE_NAMES

ROOT = Path(__file__).resolve().parents[2]


def _kpilot(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.kpilot", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, check=False)


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a /metrics page: (name, labels) -> value."""
    with urllib.request.urlopen(url, timeout=5) as r:
        text = r.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def total(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


async def test_the_bus_counts_what_it_consumes_and_publishes(make_bus) -> None:  # type: ignore[no-untyped-def]
    """In-process, on a real server: a handled message, a failing one dead-lettered, and a publish."""
    bus, operator = await make_bus("planner"), await make_bus("operator")
    url = metrics.Endpoint.start("planner", "test", "0")
    consumer = f"planner-metrics-{new_id()}"
    done = asyncio.Event()
    seen: list[int] = []

    async def handler(msg: Heartbeat) -> None:
        seen.append(msg.seq)
        if msg.seq == 2:
            raise RuntimeError("planted failure")
        done.set()

    await bus.consume(HEARTBEAT_PING, consumer, handler, Heartbeat, max_deliver=1, backoff=(0.01,))
    before = scrape(url)
    await operator.publish(HEARTBEAT_PING, Heartbeat(source="operator", seq=2))
    await operator.publish(HEARTBEAT_PING, Heartbeat(source="operator", seq=1))
    await asyncio.wait_for(done.wait(), 10)
    deadline = time.monotonic() + 10
    while total(scrape(url), "kpilot_messages_total", consumer=consumer, outcome="dead_lettered") < 1:
        assert time.monotonic() < deadline, "the failing message was never dead-lettered"
        await asyncio.sleep(0.05)
    after = scrape(url)
    assert total(after, "kpilot_messages_total", consumer=consumer, outcome="received") == 2
    assert total(after, "kpilot_messages_total", consumer=consumer, outcome="handled") == 1
    assert total(after, "kpilot_handler_seconds_count", consumer=consumer) == 1
    assert total(after, "kpilot_bus_lag_seconds_count", consumer=consumer) == 1
    published = total(after, "kpilot_published_total", service="operator", kind="heartbeat") - \
        total(before, "kpilot_published_total", service="operator", kind="heartbeat")
    assert published == 2
    assert total(after, "kpilot_published_total", service="planner", kind="dead_letter") >= 1


@pytest.mark.slow
async def test_every_service_serves_the_jobs_counts_on_metrics(tmp_path: Path) -> None:
    port, state_dir = free_port(), tmp_path / "state"
    up = await asyncio.to_thread(_kpilot, "up", "--detach", "--port", str(port), "--state-dir",
                                 str(state_dir), timeout=200)
    assert up.returncode == 0, up.stdout + up.stderr
    url = f"nats://127.0.0.1:{port}"
    try:
        status = json.loads((await asyncio.to_thread(_kpilot, "status", "--json", "--nats", url,
                                                     timeout=60)).stdout)
        urls = {r["name"]: r["metrics_url"] for r in status if r["kind"] == "service"}
        assert set(urls) == set(SERVICE_NAMES) and all(u and u.startswith("http://127.0.0.1:")
                                                       for u in urls.values()), urls
        hb = await asyncio.to_thread(_kpilot, "heartbeat", "--nats", url, timeout=60)
        assert hb.returncode == 0, hb.stdout + hb.stderr
        bus = await Bus.connect(url, "kpilot")
        req = OptimizeRequest(source="kpilot", task_path=str(ROOT / "examples/vector_add.py"), budget_s=120.0,
                              gpu_budget_s=60.0, max_candidates=1, policy="rules", job_id=f"job-{new_id()}")
        await bus.publish(OPTIMIZE_REQUEST, req)
        await bus.close()
        deadline = time.monotonic() + 300  # ~60 s on a quiet 2-core machine; minutes under load
        while total(scrape(urls["critic"]), "kpilot_patches_total") < 1:  # the job's patch decision
            assert time.monotonic() < deadline, f"no patch decision; logs in {state_dir / 'logs'}"
            await asyncio.sleep(0.5)
        got = {name: scrape(u) for name, u in urls.items()}
    finally:
        await asyncio.to_thread(_kpilot, "down", "--port", str(port), "--state-dir", str(state_dir),
                                timeout=60)
    for name in SERVICE_NAMES:  # every service handled the heartbeat ping and says who it is
        assert total(got[name], "kpilot_messages_total", consumer=f"{name}-heartbeat", outcome="handled") >= 1
        assert total(got[name], "kpilot_service_info", service=name) == 1
    planner, verifier = got["planner"], got["verifier"]
    assert total(planner, "kpilot_job_updates_total", state="open") >= 1
    assert total(planner, "kpilot_candidates_proposed_total") >= 1
    assert total(planner, "kpilot_jobs") >= 1
    static = total(verifier, "kpilot_candidates_total", layer="static")
    assert static == total(planner, "kpilot_candidates_proposed_total")  # each candidate reached static
    assert total(verifier, "kpilot_gpu_seconds_total") == 0.0  # no GPU here: nothing was timed
    assert total(verifier, "kpilot_messages_total", consumer="verifier", outcome="handled") >= 1
    assert total(got["toolrunner"], "kpilot_tool_calls_total", tool="compile") >= 1
    assert total(got["toolrunner"], "kpilot_tool_call_seconds_count") >= 1
    assert total(got["critic"], "kpilot_messages_total", outcome="handled") >= static
