"""kpilot profile TASK.py [--kernel K] [--json]: one kernel's ncu counters as a state vector."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from services.kpilot.commands.common import nats_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="profile one kernel with ncu on a GPU runner; the telemetry service "
                                       "publishes its counters on telemetry.kernel.<node>.<kernel>")
    nats_arg(p)
    p.add_argument("task", type=Path, metavar="TASK.py", help="a kernel task file (examples/README.md)")
    p.add_argument("--kernel", default="", help="which kernel of the task (default: its first)")
    p.add_argument("--shape", default="micro", help="micro, full or edge:<i> (default %(default)s)")
    p.add_argument("--config", default="{}", help="config overrides as JSON, e.g. '{\"BLOCK\": 256}'")
    p.add_argument("--cuda-device", type=int, default=0, help="the runner's CUDA device index")
    p.add_argument("--node", default="", help="node label of the vector (default: the runner's host)")
    p.add_argument("--gpu", default="", help="GPU label of the vector (default: cuda:<index>)")
    p.add_argument("--json", action="store_true", help="print the StateVector")
    p.add_argument("--timeout", type=float, default=960.0,
                   help="seconds to wait (telemetry gives the runner 900 s: ncu replays the kernel)")
    p.set_defaults(func=_profile)


def _profile(args: argparse.Namespace) -> int:
    if not args.task.is_file():
        raise ValueError(f"{args.task}: no such task file; pass the path of a task such as examples/matmul.py")
    try:
        config = json.loads(args.config)
    except json.JSONDecodeError as e:
        raise ValueError(f"--config is not JSON ({e}); e.g. --config '{{\"BLOCK\": 256}}'") from e
    req = {"task_path": str(args.task.resolve()), "kernel": args.kernel, "shape": args.shape,
           "config": config, "cuda_device": args.cuda_device, "node": args.node, "gpu": args.gpu}
    from shared.messages import ToolResult
    out = asyncio.run(_request(args.nats, req, args.timeout))
    if isinstance(out, ToolResult):
        err = out.error
        code, message = (err.code, err.message) if err is not None else ("failed", "no result")
        print(f"kpilot profile: {code}: {message}", file=sys.stderr)
        return 2 if code in ("invalid_request", "refused") else 1
    if args.json:
        import msgspec
        print(msgspec.json.format(msgspec.json.encode(out), indent=2).decode())
    else:
        print(render(out))
    return 0


async def _request(url: str, args: dict[str, Any], timeout_s: float):  # type: ignore[no-untyped-def]
    from services.telemetry.profile_endpoint import TOOL, ProfileReply
    from shared.bus import Bus
    from shared.messages import ToolRequest
    from shared.subjects import KERNEL_PROFILE
    bus = await Bus.connect(url, "kpilot")
    try:
        req = ToolRequest(source="kpilot", tool=TOOL, args=args)
        return await bus.request(KERNEL_PROFILE, req, ProfileReply, timeout_s=timeout_s)  # type: ignore[arg-type]
    finally:
        await bus.close()


def render(v: Any) -> str:  # a StateVector
    """One line per figure (dimension, value, unit, ncu source), then the absent dimensions."""
    space = v.triples[0].space if v.triples else "kernel:?"
    lines = [f"{space} on {v.gpu_name or 'unknown device'} ({v.node}/{v.gpu}), ncu, one launch"]
    for t in v.triples:
        lines.append(f"  {t.resource:<17} {t.value:>14.6g} {t.unit:<16} {t.source}")
    lines += [f"  {a.resource:<17} absent: {a.reason}" for a in v.absent]
    return "\n".join(lines)
