"""Arguments several commands share."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from shared.service import DEFAULT_NATS


def register(sub: argparse._SubParsersAction) -> None:  # this module adds no command
    del sub


def nats_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nats", default=os.environ.get("KPILOT_NATS", DEFAULT_NATS),
                   help="NATS URL (default: $KPILOT_NATS or %(default)s)")
    p.add_argument("--tls-ca", metavar="CA_PEM", default=None,
                   help="CA of a stack started with `kpilot up --tls` (<state-dir>/tls/ca.pem; or $KPILOT_NATS_CA)")


def stack_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=4222, help="NATS port on 127.0.0.1 (default %(default)s)")
    p.add_argument("--state-dir", type=Path, default=Path(os.environ.get("KPILOT_STATE", ".kpilot")),
                   help="JetStream data, credentials and logs (default: $KPILOT_STATE or .kpilot)")
