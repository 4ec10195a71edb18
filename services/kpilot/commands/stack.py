"""kpilot up | down | status | tail | heartbeat | schemas."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from services.kpilot.commands.common import nats_arg, stack_args

COUNT_TIMEOUT_S = 30.0  # `tail --count N` without --timeout ends after this long


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("up", help="start nats-server and every service")
    stack_args(p)
    p.add_argument("--detach", action="store_true", help="return once every service is healthy")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for health")
    p.add_argument("--telemetry-period", type=float, metavar="S",
                   help="seconds between the telemetry service's device samples (its default: 15)")
    p.add_argument("--tls", action="store_true",
                   help="TLS for every client connection, with a CA and server certificate generated in "
                        "<state-dir>/tls/ (clients pass --tls-ca <state-dir>/tls/ca.pem)")
    p.add_argument("--cluster", type=int, default=0, metavar="N",
                   help="N nats-servers with routes on ports PORT..PORT+N-1, every stream at N replicas")
    p.add_argument("--llm", action="store_true",
                   help="start the local model server (llama.cpp, SmolLM2-135M; `make llm`) on loopback and "
                        "point the planner's llm policy at it")
    p.add_argument("--llm-port", type=int, default=8012, help="port of that server (default 8012)")
    p.set_defaults(func=_up)

    p = sub.add_parser("down", help="stop what `up` started")
    stack_args(p)
    p.set_defaults(func=_down)

    p = sub.add_parser("status", help="every service instance with health, message counts and restarts, "
                                      "and every nats-server with the streams it leads")
    nats_arg(p)
    p.add_argument("--state-dir", type=Path, default=Path(os.environ.get("KPILOT_STATE", ".kpilot")),
                   help="where `up` recorded the stack (servers, pids, monitor port); default $KPILOT_STATE "
                        "or .kpilot")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_status)

    p = sub.add_parser("tail", help="live stream of subjects for operators")
    nats_arg(p)
    p.add_argument("subjects", nargs="+", metavar="SUBJECT", help="NATS subjects, wildcards allowed")
    p.add_argument("--json", action="store_true", help="one JSON object per line: subject, headers, data")
    p.add_argument("--since", help="replay from JetStream first, e.g. 30s, 5m, 2h")
    p.add_argument("--count", type=int, help=f"stop after N messages (or after --timeout, {COUNT_TIMEOUT_S:g} s "
                   "by default with --count; exit 1 when fewer arrived)")
    p.add_argument("--timeout", type=float, help="stop after this many seconds")
    p.add_argument("--verify", action="store_true",
                   help="check the critic's Ed25519 signature of each patches.verified.* message")
    p.add_argument("--trust-key", metavar="PUB",
                   help="the critic's public key file (default: the `trust` KV bucket; <state-dir>/signing/critic.pub)")
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
              telemetry_period_s=args.telemetry_period, tls=args.tls, cluster=args.cluster,
              llm_port=args.llm_port if args.llm else None)


def _down(args: argparse.Namespace) -> int:
    from services.kpilot.stack import down
    return down(args.state_dir, args.port)


def _status(args: argparse.Namespace) -> int:
    from urllib.parse import urlparse

    from services.kpilot.observe import add_supervision, print_status, status
    from services.kpilot.stack import read_state
    port = urlparse(args.nats.split(",")[0]).port or 4222
    rows = asyncio.run(status(args.nats, state_dir=args.state_dir))
    st = read_state(args.state_dir, port)
    if st is not None and st.http_port:
        monitor = f"NATS monitor: http://127.0.0.1:{st.http_port} (loopback only)"
        print(monitor, file=sys.stderr if args.json else sys.stdout)
    return print_status(add_supervision(rows, st.children if st else {}), args.json)


def _tail(args: argparse.Namespace) -> int:
    from services.kpilot.observe import parse_duration, tail
    since = parse_duration(args.since) if args.since else None
    # --count alone used to wait forever when fewer than N messages were stored or came.
    timeout = args.timeout if args.timeout is not None or args.count is None else COUNT_TIMEOUT_S
    return asyncio.run(tail(args.nats, args.subjects, as_json=args.json, since=since, count=args.count,
                            timeout_s=timeout, verify=args.verify, trust_key=args.trust_key))


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
