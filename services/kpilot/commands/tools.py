"""kpilot tool NAME --args JSON | kpilot tool --list."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from services.kpilot.commands.common import nats_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tool", help="call a tool over the bus and print its result record as JSON")
    nats_arg(p)
    p.add_argument("name", nargs="?", help="tool name (see --list)")
    p.add_argument("--args", default="{}", help="the tool's arguments as a JSON object")
    p.add_argument("--list", action="store_true", help="every tool with its input and output schema")
    p.add_argument("--timeout", type=float, default=900.0)
    p.set_defaults(func=_tool)


def _tool(args: argparse.Namespace) -> int:
    if args.list:
        return asyncio.run(_list(args.nats))
    if not args.name:
        raise ValueError("name a tool (`kpilot tool compile --args '{...}'`) or pass --list")
    try:
        tool_args = json.loads(args.args)
    except json.JSONDecodeError as e:
        raise ValueError(f"--args is not JSON ({e}); pass an object such as '{{\"task_path\": \"x.py\"}}'") from e
    if not isinstance(tool_args, dict):
        raise ValueError(  # noqa: TRY004 - the CLI reports a ValueError as a usage error with its fix
            "--args must be a JSON object, e.g. '{\"task_path\": \"examples/vector_add.py\"}'")
    return asyncio.run(_call(args.nats, args.name, tool_args, args.timeout))


async def _list(url: str) -> int:
    from shared.bus import Bus
    bus = await Bus.connect(url, "kpilot")
    try:
        reply = await bus.nc.request("toolrunner.list", b"", timeout=10)
    finally:
        await bus.close()
    print(json.dumps(json.loads(reply.data), indent=2))
    return 0


async def _call(url: str, name: str, tool_args: dict[str, object], timeout_s: float) -> int:
    import msgspec

    from shared.bus import Bus
    from shared.toolclient import BusToolClient
    bus = await Bus.connect(url, "kpilot")
    try:
        result = await BusToolClient(bus, timeout_s=timeout_s).call(name, tool_args)
    finally:
        await bus.close()
    if result.ok:
        print(json.dumps(result.result, indent=2))
        return 0
    assert result.error is not None
    if result.error.code == "invalid_request":
        print(f"kpilot tool {name}: {result.error.message}", file=sys.stderr)
        for v in result.error.violations:
            print(f"  - {v}", file=sys.stderr)
        return 2
    print(json.dumps(msgspec.to_builtins(result), indent=2))
    print(f"kpilot tool {name}: {result.error.code}: {result.error.message}", file=sys.stderr)
    return 1
