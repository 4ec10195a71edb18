"""kpilot verify TASK.py [CANDIDATE.py] [--config KEY=VALUE ...] [--json]: the verifier's funnel, offline.

Runs outside any job and needs no stack: the tools run in this process through the toolrunner's own
executor, with every check the toolrunner applies (each tool still in its sandboxed workers). Prints one verdict per layer reached; exit code 0 when no layer failed, 1 when one did.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from shared.toolclient import InProcessToolClient


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="run the verifier's static -> micro -> full funnel on a candidate")
    p.add_argument("task", type=Path, help="the task file (reference, shapes, tolerance, precision policy)")
    p.add_argument("candidate", type=Path, nargs="?", help="a candidate task file (default: the task itself)")
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override of the candidate's CONFIG, e.g. --config BLOCK=1024 (repeatable)",
    )
    p.add_argument("--parent", type=Path, help="the baseline file timed against (default: the task)")
    p.add_argument("--min-gain", type=float, help="accept when the speedup CI's lower bound > 1 + this")
    p.add_argument("--json", action="store_true", help="a JSON list of verdicts")
    p.set_defaults(func=_verify)


def parse_config(items: list[str]) -> dict[str, int | float | str | bool]:
    out: dict[str, int | float | str | bool] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--config {item!r}: write KEY=VALUE, e.g. --config BLOCK=1024")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        if not isinstance(value, (int, float, str, bool)):
            # A user mistake (main() prints ValueErrors as usage errors), so not a TypeError.
            raise ValueError(f"--config {item!r}: the value must be a number, true/false or a string")  # noqa: TRY004
        out[key] = value
    return out


def tool_client() -> InProcessToolClient:
    """How `kpilot verify` reaches the tools: the toolrunner's executor in this process, no bus."""
    from services.toolrunner.registry import local_executor
    from shared.toolclient import InProcessToolClient

    return InProcessToolClient(local_executor(), source="kpilot")


def _verify(args: argparse.Namespace) -> int:
    from services.verifier.funnel import VerifyJob, verify
    from services.verifier.policy import VerifyPolicy
    from shared.ids import new_id

    for path in [args.task, args.candidate, args.parent]:
        if path is not None and not path.is_file():
            raise ValueError(f"no such file: {path} (pass a task .py file)")
    policy = VerifyPolicy() if args.min_gain is None else VerifyPolicy(min_gain=args.min_gain)
    job = VerifyJob(
        candidate_id=new_id(),
        task_path=str(args.task.resolve()),
        candidate_path=str(args.candidate.resolve()) if args.candidate else None,
        config=parse_config(args.config),
        parent_path=str(args.parent.resolve()) if args.parent else None,
    )
    verdicts = asyncio.run(verify(job, tool_client(), policy))
    if args.json:
        print(json.dumps(msgspec.to_builtins(verdicts), indent=1))
    else:
        for v in verdicts:
            print(f"{v.layer:<6} {v.status:<7} {v.wall_s:6.1f} s  gpu {v.gpu_seconds:.1f} s")
            for r in v.reasons:
                print(f"    - {r}")
            for line in v.annotations:
                print(f"      {line}")
            for m in v.measurements:
                value = m.value if m.not_measured is None else f"not measured: {m.not_measured}"
                print(f"    {m.name} = {value} {m.unit}".rstrip())
    return 1 if any(v.status == "fail" for v in verdicts) else 0
