"""kpilot up | down | status | tail | heartbeat | schemas."""

from __future__ import annotations

import argparse
import asyncio

from services.kpilot.commands.common import nats_arg, stack_args


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("up", help="start nats-server and every service")
    stack_args(p)
    p.add_argument("--detach", action="store_true", help="return once every service is healthy")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for health")
    p.add_argument("--telemetry-period", type=float, metavar="S",
                   help="seconds between the telemetry service's device samples (its default: 15)")
    p.add_argument("--llm", action="store_true",
                   help="start the local model server (llama.cpp, SmolLM2-135M; `make llm`) on loopback and "
                        "point the planner's llm policy at it")
    p.add_argument("--llm-port", type=int, default=8012, help="port of that server (default 8012)")
    p.set_defaults(func=_up)

    p = sub.add_parser("down", help="stop what `up` started")
    stack_args(p)
    p.set_defaults(func=_down)

    p = sub.add_parser("status", help="every service instance with health and message counts")
    nats_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_status)

    p = sub.add_parser("tail", help="live stream of subjects for operators")
    nats_arg(p)
    p.add_argument("subjects", nargs="+", metavar="SUBJECT", help="NATS subjects, wildcards allowed")
    p.add_argument("--json", action="store_true", help="one JSON object per line: subject, headers, data")
    p.add_argument("--since", help="replay from JetStream first, e.g. 30s, 5m, 2h")
    p.add_argument("--count", type=int, help="stop after N messages")
    p.add_argument("--timeout", type=float, help="stop after this many seconds")
    p.set_defaults(func=_tail)

    p = sub.add_parser("heartbeat", help="ping every service through JetStream and wait for the answers")
    nats_arg(p)
    p.add_argument("--timeout", type=float, default=10.0)
    p.set_defaults(func=_heartbeat)

    p = sub.add_parser("schemas", help="write the JSON Schemas under schemas/ (or --check for drift)")
    p.add_argument("--check", action="store_true", help="exit 1 when schemas/ differs from the code")
    p.set_defaults(func=_schemas)


def _up(args: argparse.Namespace) -> int:
    from services.kpilot.stack import up
    if args.telemetry_period is not None and args.telemetry_period <= 0:
        raise ValueError(f"--telemetry-period {args.telemetry_period:g}: give a positive number of seconds, e.g. 1")
    return up(args.state_dir, args.port, detach=args.detach, timeout_s=args.timeout,
              telemetry_period_s=args.telemetry_period, llm_port=args.llm_port if args.llm else None)


def _down(args: argparse.Namespace) -> int:
    from services.kpilot.stack import down
    return down(args.state_dir, args.port)


def _status(args: argparse.Namespace) -> int:
    from services.kpilot.observe import print_status, status
    return print_status(asyncio.run(status(args.nats)), args.json)


def _tail(args: argparse.Namespace) -> int:
    from services.kpilot.observe import parse_duration, tail
    since = parse_duration(args.since) if args.since else None
    return asyncio.run(tail(args.nats, args.subjects, as_json=args.json, since=since, count=args.count,
                            timeout_s=args.timeout))


def _heartbeat(args: argparse.Namespace) -> int:
    from services.kpilot.heartbeat import heartbeat
    from shared.subjects import SERVICE_NAMES
    acks = asyncio.run(heartbeat(args.nats, timeout_s=args.timeout))
    for name in SERVICE_NAMES:
        rtt = acks.get(name)
        print(f"{name:<11} " + (f"ack in {rtt * 1000:.1f} ms" if rtt is not None else "NO ACK"))
    return 0 if set(SERVICE_NAMES) <= set(acks) else 1


def _schemas(args: argparse.Namespace) -> int:
    from services.kpilot.schemas import run_schemas
    return run_schemas(check=args.check)
