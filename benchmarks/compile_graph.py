"""What torch.compile is handed when it compiles a task's eager baseline, read on CPU (no GPU).

`torch._dynamo.explain` traces the task's `eager` function the way `torch.compile` does and reports its
FX graphs and graph breaks. This script adds how many matmuls those graphs hold and how many distinct
operand shapes they have: with mode="max-autotune" inductor benchmarks its GEMM templates once per
distinct shape, so that count bounds how much autotuning the compile baseline has to do.

It explains why a compile baseline is slow; it measures no time. The trace depends on the shape's
structure (for `l4_jagged_attention`: the number of sequences and their lengths), not on its sizes per
token, so `--set` can shrink those to fit the CPU while keeping the structure:

    .venv/bin/python benchmarks/compile_graph.py --task l4_jagged_attention --shape full --set h=1 --set d=16 \\
        --out benchmarks/results/compile_graph_l4_jagged_attention.json
"""

from __future__ import annotations

import argparse
import operator
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.suite import SuiteError, select

MAX_REASON_CHARS = 300


class CompileGraph(msgspec.Struct, kw_only=True):
    """One task's eager baseline as dynamo traces it."""

    task: str
    shape: dict[str, int | str]  # the shape traced (the task's, with --set applied, fp32 on CPU)
    seed: int
    torch: str
    graphs: int
    graph_breaks: int
    break_reasons: list[str]
    ops: int  # FX nodes that call a function or method, over all graphs
    matmuls: int
    distinct_matmul_shapes: int  # the (operand shapes) pairs inductor's max-autotune tunes apart
    how: str = (
        "torch._dynamo.explain(eager)(inputs) on CPU; matmul = torch.matmul, @, torch.bmm, .matmul, .bmm"
    )


_MATMUL_FUNCTIONS = {"matmul", "bmm"}


def _is_matmul(node) -> bool:
    import torch

    if node.op == "call_method":
        return node.target in _MATMUL_FUNCTIONS
    return node.op == "call_function" and node.target in (torch.matmul, operator.matmul, torch.bmm)


def _operand_shapes(node) -> tuple[tuple[int, ...], ...]:
    return tuple(
        tuple(a.meta["example_value"].shape)
        for a in node.args
        if hasattr(a, "meta") and "example_value" in a.meta
    )


def parse_sets(items: Sequence[str], shape: dict) -> dict:
    """The shape with each KEY=INT of --set applied; ValueError names a key the shape lacks or a bad value."""
    out = dict(shape)
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in shape:
            raise ValueError(f"--set {item!r}: expected KEY=INT with KEY one of {', '.join(sorted(shape))}")
        try:
            out[key] = int(value)
        except ValueError:
            raise ValueError(f"--set {item!r}: {value!r} is not an integer; e.g. --set {key}=1") from None
    return out


def explain(task: str, shape_name: str, sets: Sequence[str], seed: int = 0) -> CompileGraph:
    import torch

    from services.toolrunner.task_runtime import import_task

    meta = select(task)[0]
    module = import_task(str(meta.path))
    shapes = module.SHAPES
    if shape_name not in ("micro", "full"):
        raise ValueError(f"--shape {shape_name!r}: use micro or full")
    shape = {**parse_sets(sets, dict(shapes[shape_name])), "dtype": "float32"}
    eager = getattr(module, "BASELINES", {}).get("eager")
    if eager is None:
        raise ValueError(
            f"{task} has no eager baseline: torch.compile compiles that one (see baselines_worker)"
        )
    inputs = module.make_inputs(shape, seed, "cpu")
    result = torch._dynamo.explain(eager)(inputs)
    nodes = [n for g in result.graphs for n in g.graph.nodes]
    mm = [n for n in nodes if _is_matmul(n)]
    return CompileGraph(
        task=task,
        shape=shape,
        seed=seed,
        torch=str(torch.__version__),
        graphs=result.graph_count,
        graph_breaks=result.graph_break_count,
        break_reasons=[str(b.reason)[:MAX_REASON_CHARS] for b in result.break_reasons],
        ops=sum(1 for n in nodes if n.op in ("call_function", "call_method")),
        matmuls=len(mm),
        distinct_matmul_shapes=len({_operand_shapes(n) for n in mm}),
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", required=True, help="a suite task name, e.g. l4_jagged_attention")
    ap.add_argument("--shape", default="micro", help="micro or full (default micro)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=INT", help="override one shape key")
    ap.add_argument("--seed", type=int, default=0, help="input seed (baselines.py uses 0)")
    ap.add_argument("--out", type=Path, default=None, help="write the record as JSON here too")
    args = ap.parse_args(argv)
    try:
        rec = explain(args.task, args.shape, args.set, args.seed)
    except (SuiteError, ValueError) as e:
        ap.error(str(e))
    text = msgspec.json.format(msgspec.json.encode(rec), indent=2)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_bytes(text + b"\n")
    print(text.decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
