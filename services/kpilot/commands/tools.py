"""kpilot tool NAME --args JSON | kpilot tool --list.

`--list` shows every tool of the toolrunner's catalog, where it runs (GPU tools only on a runner with a
GPU, the rest on any runner) and which runner instances serve it now, with its input and output schema.
A name outside the catalog is an unknown tool; a catalog tool no runner serves is unavailable.
"""

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
    p.add_argument("--list", action="store_true",
                   help="every tool: where it runs (cpu/gpu runner), who serves it now, its schemas")
    p.add_argument("--json", action="store_true", help="with --list: the list as JSON (schemas included)")
    p.add_argument("--timeout", type=float, default=900.0)
    p.set_defaults(func=_tool)


def _tool(args: argparse.Namespace) -> int:
    if args.list:
        return asyncio.run(_list(args.nats, args.json))
    if not args.name:
        raise ValueError("name a tool (`kpilot tool compile --args '{...}'`) or pass --list")
    if args.name not in catalog():
        raise ValueError(f"unknown tool {args.name!r} (see kpilot tool --list): the tools are "
                         f"{', '.join(catalog())}")
    try:
        tool_args = json.loads(args.args)
    except json.JSONDecodeError as e:
        raise ValueError(f"--args is not JSON ({e}); pass an object such as '{{\"task_path\": \"x.py\"}}'") from e
    if not isinstance(tool_args, dict):
        raise ValueError(  # noqa: TRY004 - the CLI reports a ValueError as a usage error with its fix
            "--args must be a JSON object, e.g. '{\"task_path\": \"examples/vector_add.py\"}'")
    return asyncio.run(_call(args.nats, args.name, tool_args, args.timeout))


def catalog() -> dict[str, bool]:
    """Every tool name -> needs a GPU, from the toolrunner's catalog (the CLI may read it)."""
    from services.toolrunner.catalog import load_specs

    return {name: spec.needs_gpu for name, spec in load_specs().items()}


async def _list(url: str, as_json: bool) -> int:
    import msgspec

    from services.kpilot.observe import collect
    from services.toolrunner.catalog import load_specs
    from shared.bus import Bus
    from shared.subjects import tool_subject

    bus = await Bus.connect(url, "kpilot")
    try:  # every runner instance answers $SRV.INFO with the endpoints it serves
        infos = await collect(bus, "$SRV.INFO.toolrunner", 0.7)
    finally:
        await bus.close()
    served: dict[str, list[str]] = {}
    for info in infos:
        for ep in info.get("endpoints", []):
            served.setdefault(ep.get("subject", ""), []).append(str(info.get("id", "?")))
    rows = []
    for name, spec in load_specs().items():
        rows.append({"name": name, "runs_on": "gpu runner" if spec.needs_gpu else "cpu or gpu runner",
                     "needs_gpu": spec.needs_gpu, "served_by": served.get(tool_subject(name), []),
                     "version": spec.version, "description": spec.description,
                     "input_schema": msgspec.json.schema(spec.input),
                     "output_schema": msgspec.json.schema(spec.output)})
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        now = f"served by {len(r['served_by'])} runner(s)" if r["served_by"] else "no runner up serves it"
        print(f"{r['name']:<20} {r['runs_on']:<18} {now:<26} {r['description'][:70]}")
    print("schemas: kpilot tool --list --json, or schemas/tools/")
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
