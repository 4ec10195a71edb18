"""kpilot transforms [--json] | kpilot transform TASK.py NAME [--param K=V ...] [--out FILE] [--json]."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import msgspec

from shared.messages import Scalar


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("transforms", help="the source transformation library (what the planner can rewrite)")
    p.add_argument("--json", action="store_true", help="print the table as JSON records")
    p.set_defaults(func=_list)

    p = sub.add_parser("transform", help="apply one source transformation to a task file (no GPU, no stack)")
    p.add_argument("task", type=Path, help="a kernel task file (examples/README.md)")
    p.add_argument("name", help="a transformation name from `kpilot transforms`")
    p.add_argument("--param", action="append", default=[], metavar="K=V",
                   help="a parameter value within its domain, e.g. --param group_m=8 (repeatable)")
    p.add_argument("--kernel", default="", help="which kernel of the task (default: its primary)")
    p.add_argument("--out", type=Path, help="where to write the candidate task (default: print the diff only)")
    p.add_argument("--json", action="store_true", help="print the result record (source, diff, params)")
    p.set_defaults(func=_apply)


def _list(args: argparse.Namespace) -> int:
    from shared.transforms.table import records, specs
    if args.json:
        print(json.dumps(records(), indent=2))
        return 0
    for s in specs():
        params = ", ".join(f"{p.name}={p.default} in {p.domain}" + (f" (-> {p.constexpr})" if p.constexpr else "")
                           for p in s.params) or "no parameters"
        print(f"{s.name}  [{s.language}]  {s.summary}")
        print(f"    answers: {', '.join(s.answers)}")
        print(f"    params: {params}")
        print(f"    needs: {s.precondition}")
    return 0


def parse_param(text: str) -> tuple[str, Scalar]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise ValueError(f"--param {text!r}: write it as KEY=VALUE, e.g. --param group_m=8")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw  # a bare word: a string value such as evict_first
    if not isinstance(value, int | float | str | bool):
        raise ValueError(f"--param {text!r}: the value must be a number, a word or true/false")  # noqa: TRY004
    return key, value


def _apply(args: argparse.Namespace) -> int:
    from shared.transforms.base import Refused
    from shared.transforms.table import apply
    if not args.task.is_file():
        raise ValueError(f"{args.task}: no such task file; pass the path of a task such as examples/matmul.py")
    params = dict(parse_param(x) for x in args.param)
    got = apply(args.task.read_text(), args.name, params, args.kernel, args.task.name)
    if isinstance(got, Refused):
        if args.json:
            print(json.dumps(msgspec.to_builtins(got), indent=2))
        print(f"kpilot transform: {got.transform} refused: {got.reason}", file=sys.stderr)
        return 2
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(got.source)
    if args.json:
        print(json.dumps(msgspec.to_builtins(got) | {"out": str(args.out) if args.out else None}, indent=2))
    else:
        print(got.diff, end="")
        if args.out is not None:
            print(f"kpilot transform: {got.transform} {got.params} -> {args.out}", file=sys.stderr)
    return 0
