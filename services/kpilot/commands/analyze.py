"""kpilot analyze TASK.py [--json] | kpilot patterns [--json]."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from services.kpilot.commands.common import nats_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("analyze", help="ask the decomposer what limits a kernel (needs a running stack)")
    nats_arg(p)
    p.add_argument("task", type=Path, help="a kernel task file (examples/README.md)")
    p.add_argument("--kernel", default="", help="which kernel of the task (default: its primary)")
    p.add_argument("--config", default="{}", help="config overrides as JSON, e.g. '{\"BLOCK\": 256}'")
    p.add_argument("--shape", default="full", help="the named shape that decides specialization")
    p.add_argument("--json", action="store_true", help="print the Decomposition record")
    p.add_argument("--timeout", type=float, default=300.0)
    p.set_defaults(func=_analyze)

    p = sub.add_parser("patterns", help="the bottleneck pattern library")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_patterns)


def _analyze(args: argparse.Namespace) -> int:
    if not args.task.is_file():
        raise ValueError(f"{args.task}: no such task file; pass the path of a task such as examples/matmul.py")
    try:
        config = json.loads(args.config)
    except json.JSONDecodeError as e:
        raise ValueError(f"--config is not JSON ({e}); e.g. --config '{{\"BLOCK\": 256}}'") from e
    ref = {"task_path": str(args.task.resolve()), "config": config, "kernel": args.kernel, "shape": args.shape}
    result = asyncio.run(_request(args.nats, ref, args.timeout))
    if not result.ok or result.result is None:
        assert result.error is not None
        print(f"kpilot analyze: {result.error.code}: {result.error.message}", file=sys.stderr)
        return 2 if result.error.code in ("invalid_request", "refused") else 1
    if args.json:
        print(json.dumps(result.result, indent=2))
    else:
        print(render(result.result))
    return 0


async def _request(url: str, ref: dict[str, Any], timeout_s: float):  # type: ignore[no-untyped-def]
    from shared.bus import Bus
    from shared.messages import ToolRequest, ToolResult
    from shared.subjects import DECOMPOSER_ANALYZE
    bus = await Bus.connect(url, "kpilot")
    try:
        req = ToolRequest(source="kpilot", tool="decompose", args=ref)
        return await bus.request(DECOMPOSER_ANALYZE, req, ToolResult, timeout_s=timeout_s)
    finally:
        await bus.close()


def render(d: dict[str, Any]) -> str:
    """The diagnostic report: findings with evidence and fixes, then the node table and the IR summary."""
    roof = d.get("roofline") or {}
    bound = roof.get("bound", "roofline unknown")
    head = f"kernel {d['kernel']} ({d['target']}, {d['num_warps']} warps): {bound}"
    lines = [head, "", "findings (most important first):"]
    for f in d.get("findings", []):
        where = ", ".join(Path(x).name for x in f["locations"][:4]) or "-"
        lines.append(f"  [{f['severity']}] {f['pattern']}  at {where}")
        lines += [f"      evidence: {e}" for e in f["evidence"][:3]]
        fixes = ", ".join(str(t) for t in f.get("transformations", []))
        if f.get("fix_transform"):
            fixes += f" (transformation: {f['fix_transform']})"
        if fixes:
            lines.append(f"      fix: {fixes}")
        if f.get("cost"):
            lines.append(f"      cost: {f['cost']}")
    if not d.get("findings"):
        lines.append("  none")
    unchecked = d.get("unchecked", [])
    if unchecked:
        needs: dict[str, list[str]] = {}
        for u in unchecked:
            needs.setdefault(", ".join(u.get("needs", [])) or u.get("reason", ""), []).append(u["pattern"])
        lines += ["", "not checked (missing evidence):"]
        lines += [f"  needs {k}: {', '.join(v)}" for k, v in needs.items()]
    lines += ["", "nodes of interest (kind, op, hardware unit, file:line):"]
    for n in d.get("nodes", []):
        unit = str(n.get("unit", ""))
        if n.get("kind") == "compute" and not any(u in unit for u in ("FP", "tensor", "MUFU", "SFU")):
            continue  # index arithmetic and constants: in the record (--json), not in the report
        loc = n.get("loc") or {}
        where = f"{Path(loc['file']).name}:{loc['line']}" if loc else ""
        lines.append(f"  {n.get('kind', '?'):<8} {n.get('op', '?'):<28} {unit:<28} {where}")
    lines += ["", f"IR summary for prompts ({d.get('summary_tokens', 0)} tokens):", d.get("summary", "")]
    return "\n".join(lines)


def _patterns(args: argparse.Namespace) -> int:
    from services.decomposer.patterns import PATTERNS
    rows = [{"id": p.id, "description": p.description, "severity": p.severity,
             "dynamic": p.dynamic is not None, "fix_transform": p.fix_transform,
             "requires": list(p.requires)} for p in PATTERNS]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(f"{r['id']:<40} {r['severity']:<7} {r['description']}")
    return 0
