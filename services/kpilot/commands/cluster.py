"""kpilot provision | probe | secrets: what the deploy files (deploy/compose.yaml, deploy/k8s/) run."""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
from pathlib import Path

from services.kpilot.commands.common import nats_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("provision", help="create or update every stream, KV bucket and object store")
    nats_arg(p)
    p.add_argument("--replicas", type=int, default=1, help="copies of each (3 on a three-server cluster)")
    p.set_defaults(func=_provision)

    p = sub.add_parser("probe", help="exit 0 when this host's instance of SERVICE answers healthy on "
                                     "health.SERVICE (a readiness probe)")
    nats_arg(p)
    p.add_argument("service")
    p.add_argument("--instance-prefix", default=None,
                   help="instance ids to accept (default: this hostname; '' accepts any instance)")
    p.add_argument("--timeout", type=float, default=2.0)
    p.set_defaults(func=_probe)

    p = sub.add_parser("secrets", help="print the per-service NATS passwords as KPILOT_PW_<SERVICE>=... lines "
                                       "(for deploy/.env or `kubectl create secret --from-env-file`)")
    p.add_argument("--state-dir", type=Path, default=Path(os.environ.get("KPILOT_STATE", ".kpilot")))
    p.set_defaults(func=_secrets)


def _provision(args: argparse.Namespace) -> int:
    from shared.bus import Bus
    from shared.provision import provision
    if args.replicas < 1:
        raise ValueError(f"--replicas {args.replicas}: give 1, or 3 on a three-server cluster")

    async def _run() -> list[str]:
        bus = await Bus.connect(args.nats, "kpilot")
        try:
            return await provision(bus.js, replicas=args.replicas)
        finally:
            await bus.close()

    for line in asyncio.run(_run()):
        print(line)
    return 0


def _probe(args: argparse.Namespace) -> int:
    from services.kpilot.observe import collect
    from shared.bus import Bus
    from shared.service import health_subject
    prefix = socket.gethostname() if args.instance_prefix is None else args.instance_prefix

    async def _run() -> list[dict]:  # type: ignore[type-arg]
        bus = await Bus.connect(args.nats, "kpilot")
        try:
            return await collect(bus, health_subject(args.service), args.timeout)
        finally:
            await bus.close()

    mine = [h for h in asyncio.run(_run()) if str(h.get("instance", "")).startswith(prefix)]
    if any(h.get("healthy") for h in mine):
        return 0
    print(f"kpilot probe: no healthy {args.service} instance {prefix!r}* answered on "
          f"{health_subject(args.service)} ({len(mine)} answered unhealthy)")
    return 1


def _secrets(args: argparse.Namespace) -> int:
    from shared.natscluster import password_env
    from shared.natsserver import Credentials
    creds = Credentials.load_or_create(args.state_dir)
    for name, password in sorted(creds.passwords.items()):
        print(f"{password_env(name)}={password}")
    return 0
