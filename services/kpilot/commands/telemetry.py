"""kpilot record | replay: telemetry traces (JSON lines of samples and launch records)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from services.kpilot.commands.common import nats_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("record", help="write a telemetry trace from the bus (or the local GPU with --local)")
    nats_arg(p)
    p.add_argument("--out", type=Path, required=True, help="trace file to write (JSON lines)")
    p.add_argument("--node", default="*", help="record only this node's samples and launches (default: all)")
    p.add_argument("--duration", type=float, help="seconds to record (default: until Ctrl-C)")
    p.add_argument("--samples", type=int, help="stop after this many samples")
    p.add_argument("--local", action="store_true",
                   help="sample this machine's GPUs directly (NVML, or --dcgm) instead of the bus; "
                        "no launch records")
    p.add_argument("--dcgm", default="", metavar="URL", help="with --local: scrape this dcgm-exporter")
    p.add_argument("--period", type=float, default=1.0, help="with --local: seconds between samples")
    p.set_defaults(func=_record)

    p = sub.add_parser("replay", help="republish a trace's samples and launches; the telemetry service "
                                      "turns them into state vectors and events")
    nats_arg(p)
    p.add_argument("trace", type=Path, metavar="TRACE")
    p.add_argument("--speed", type=float, default=1.0, help="1 = recorded pace, 10 = ten times faster, "
                                                            "inf = no waiting")
    p.add_argument("--node", default="", help="publish as this node (default: the trace's)")
    p.add_argument("--stamp", choices=("shift", "scale", "original"), default="shift",
                   help="sample times: shift (recorded spacing from now; default), scale (spacing / speed), "
                        "original")
    p.add_argument("--linger", type=float, default=3.0, help="seconds to wait for the last events")
    p.set_defaults(func=_replay)


def _record(args: argparse.Namespace) -> int:
    from services.telemetry import bustrace

    if args.local:
        from services.telemetry.records import SamplerUnavailable
        from services.telemetry.sampling import open_sampler
        node = "" if args.node == "*" else args.node
        try:
            sampler, how = open_sampler("dcgm" if args.dcgm else "nvml", node, args.dcgm)
        except SamplerUnavailable as e:
            print(f"kpilot record: {e}", file=sys.stderr)
            return 2
        assert sampler is not None  # nvml/dcgm raise SamplerUnavailable instead of returning None
        rec = bustrace.record_local(sampler, args.out, node=node, how=how, period_s=args.period,
                                    duration_s=args.duration, samples=args.samples)
    else:
        rec = asyncio.run(bustrace.record_bus(args.nats, args.out, node=args.node, duration_s=args.duration,
                                              samples=args.samples))
    print(f"wrote {args.out}: {rec.samples} samples, {len(rec.entries) - rec.samples} launch records")
    if not rec.entries:
        print("kpilot record: nothing arrived. Fix: start the telemetry service on a GPU node (or a "
              "replay, or a workload with the launch SDK), or use --local on the GPU machine", file=sys.stderr)
        return 1
    return 0


def _replay(args: argparse.Namespace) -> int:
    from services.telemetry import bustrace
    from shared.bus import Bus

    async def go() -> bustrace.ReplayStats:
        bus = await Bus.connect(args.nats, "kpilot")
        try:
            return await bustrace.replay(
                bus, args.trace, speed=args.speed, node=args.node, stamp=args.stamp, linger_s=args.linger,
                on_event=lambda e: print(f"{e.event} {e.edge} {e.node}/{e.gpu}: {e.detail}", flush=True))
        finally:
            await bus.close()

    stats = asyncio.run(go())
    print(f"replayed {stats.samples} samples, {stats.launch_records} launch records in "
          f"{stats.launch_batches} batches; {len(stats.events)} state events", file=sys.stderr)
    return 0
