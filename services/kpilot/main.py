"""kpilot: the operator CLI. Every command that talks to the bus takes `--nats URL`
(default `$KPILOT_NATS` or nats://127.0.0.1:4222).

Each module in `services/kpilot/commands/` adds its subcommands with `register(sub)`; a subcommand
sets `func(args) -> exit code` with `set_defaults`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from services.kpilot import commands
from shared.bus import BusError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kpilot", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"{commands.__name__}.{info.name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if getattr(args, "tls_ca", None):  # every Bus.connect of this process trusts that CA
        from shared.natsauth import CA_ENV
        os.environ[CA_ENV] = args.tls_ca
    from shared import logging as kplog
    kplog.configure("kpilot", "warning", json=False)  # stderr only: stdout stays clean for --json
    try:
        sys.exit(args.func(args))
    except BusError as e:
        print(f"kpilot {args.command}: {e}", file=sys.stderr)
        sys.exit(1)
    except ValueError as e:  # user mistakes: the message says how to fix them
        print(f"kpilot {args.command}: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
