"""kpilot register TASK.py...: put kernels into the registry (`kernels` KV bucket).

For each kernel of the task: `<kernel>` -> {"task_path": ...} (what the planner looks up when telemetry
names a hot kernel) and `task.<kernel>` -> the TaskManifest (dtype, precision policy, FLOP/byte formulas:
what the critic checks a speedup and a precision change against). The task is loaded in a sandboxed
worker, never imported here; a broken task is refused with every problem named.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from services.kpilot.commands.common import nats_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("register", help="register kernel tasks so telemetry events can name them")
    nats_arg(p)
    p.add_argument("tasks", nargs="+", type=Path, metavar="TASK.py")
    p.set_defaults(func=_register)


def _register(args: argparse.Namespace) -> int:
    from services.toolrunner.tasks import TaskError, load_task
    manifests = []
    for path in args.tasks:
        if not path.is_file():
            raise ValueError(f"{path}: no such task file")
        try:
            manifests.append(load_task(path.resolve()))
        except TaskError as e:
            raise ValueError(f"{path} is not a valid task:\n{e}") from e
    names = asyncio.run(register_manifests(args.nats, manifests))
    for kernel, task in names:
        print(f"registered {kernel} -> {task}")
    return 0


async def register_manifests(url: str, manifests: list) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    import msgspec

    from shared.bus import Bus
    from shared.subjects import token
    bus = await Bus.connect(url, "kpilot")
    done = []
    try:
        kv = await bus.js.key_value("kernels")
        for m in manifests:
            for kernel in m.kernel_names() or [m.name]:
                await kv.put(token(kernel), msgspec.json.encode({"task_path": m.path}))
                await kv.put(f"task.{token(kernel)}", msgspec.json.encode(m))
                done.append((kernel, m.path))
    finally:
        await bus.close()
    return done
