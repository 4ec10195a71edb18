"""kpilot provision | probe | secrets: what the deploy files (deploy/compose.yaml, deploy/k8s/) run.

`kpilot secrets --state-dir DIR` makes everything a deployment's secrets hold, once (kept on a rerun):
the servers' passwords (printed as KPILOT_PW_<USER>= lines for deploy/.env or a Kubernetes Secret), one
0600 creds file per user (DIR/creds/<user>.json, for $KPILOT_NATS_CREDS) and the critic's Ed25519 key pair
(DIR/signing/critic.key for $KPILOT_SIGNING_KEY, critic.pub for `kpilot provision --trust-key`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from pathlib import Path

from services.kpilot.commands.common import nats_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("provision", help="create or update every stream, KV bucket and object store")
    nats_arg(p)
    p.add_argument("--replicas", type=int, default=1, help="copies of each (3 on a three-server cluster)")
    p.add_argument("--trust-key", type=Path, default=None, metavar="CRITIC_PUB",
                   help="also publish this critic public key (critic.pub, base64) in the trust bucket. "
                        "Provisioning is admin-only: connect with admin's creds file ($KPILOT_NATS_CREDS)")
    p.set_defaults(func=_provision)

    p = sub.add_parser("probe", help="exit 0 when this host's instance of SERVICE answers healthy on "
                                     "health.SERVICE (a readiness probe; asks as the read-only operator, "
                                     "whatever $KPILOT_NATS_CREDS names)")
    nats_arg(p)
    p.add_argument("service")
    p.add_argument("--instance-prefix", default=None,
                   help="instance ids to accept (default: this hostname; '' accepts any instance)")
    p.add_argument("--timeout", type=float, default=2.0)
    p.set_defaults(func=_probe)

    p = sub.add_parser("secrets", help="print every NATS user's password as KPILOT_PW_<USER>=... lines (for "
                                       "deploy/.env or `kubectl create secret --from-env-file`); write the "
                                       "users' creds files and the critic's signing key pair beside them")
    p.add_argument("--state-dir", type=Path, default=Path(os.environ.get("KPILOT_STATE", ".kpilot")),
                   help="where the passwords, creds/<user>.json and signing/critic.{key,pub} are kept "
                        "(default: $KPILOT_STATE or .kpilot; deploy/secrets for deploy/compose.yaml)")
    p.set_defaults(func=_secrets)


def _provision(args: argparse.Namespace) -> int:
    import nats.errors

    from shared.bus import Bus
    from shared.natsauth import CREDS_ENV
    from shared.provision import provision
    from shared.signing import CRITIC_KEY, publish_trusted_key
    from shared.subjects import TRUST_BUCKET
    if args.replicas < 1:
        raise ValueError(f"--replicas {args.replicas}: give 1, or 3 on a three-server cluster")

    public = None
    if args.trust_key is not None:
        try:
            public = args.trust_key.read_bytes().strip()
        except OSError as e:
            raise ValueError(f"--trust-key {args.trust_key}: {e.strerror}. Fix: pass the critic.pub that "
                             f"`kpilot secrets` wrote under <state-dir>/signing/") from None

    async def _run() -> list[str]:
        bus = await Bus.connect(args.nats, "kpilot-provision")
        try:
            changed = await provision(bus.js, replicas=args.replicas)
            if public is not None:
                await publish_trusted_key(bus.js, public)
                changed.append(f"kv {TRUST_BUCKET} key {CRITIC_KEY} set")
            return changed
        finally:
            await bus.close()

    try:
        changed = asyncio.run(_run())
    except nats.errors.TimeoutError:  # the server drops a non-admin's stream requests (a permission violation)
        raise ValueError(f"no answer to the stream requests: provisioning is admin-only. Fix: set "
                         f"${CREDS_ENV} to admin's creds file (`kpilot secrets` wrote <state-dir>/creds/"
                         f"admin.json; the admin-creds secret in deploy/)") from None
    for line in changed:
        print(line)
    return 0


def _probe(args: argparse.Namespace) -> int:
    from services.kpilot.observe import collect
    from shared.bus import Bus
    from shared.service import health_subject
    prefix = socket.gethostname() if args.instance_prefix is None else args.instance_prefix

    async def _run() -> list[dict]:  # type: ignore[type-arg]
        # As the operator (no credentials): a service's own user may not request health.<service>.
        bus = await Bus.connect(args.nats, "kpilot-probe", creds_file="")
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
    from shared.signing import make_keypair
    from shared.subjects import USERS
    creds = Credentials.load_or_create(args.state_dir)
    for name in USERS:
        creds.creds_file(args.state_dir, name)
    key, pub = make_keypair(args.state_dir / "signing")
    for name in USERS:
        print(f"{password_env(name)}={creds.passwords[name]}")
    print(f"kpilot secrets: creds files in {args.state_dir / 'creds'}/<user>.json (0600), the critic's "
          f"signing key {key} (0600) and public key {pub}", file=sys.stderr)
    return 0
