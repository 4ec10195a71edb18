"""Whether a launch can be timed by CUDA-graph replay, and why not, in full. Pure (the GPU probe that
feeds it is worker_lib/gpu_timing.py's Bench.graph_refusal).

A launch path that synchronises with the host (`.item()`, `.cpu()`, `.tolist()`, `.numpy()`,
`torch.cuda.synchronize()`: a grid sized from a tensor's value, a host-side heuristic) cannot be captured:
the capture fails, and torch's message ends in hints ("CUDA kernel errors might be asynchronously
reported ...", "Compile with `TORCH_USE_CUDA_DSA` ..."), so the last line of it says nothing about the
cause. Such a launch is timed one call per sample instead, and the method record carries the whole
reason: what asked for a graph, the exception with every line of its message, and the task line that
synchronised.
"""

from __future__ import annotations

import ast
import traceback
from collections.abc import Callable
from pathlib import Path

from services.toolrunner.timing_stats import GRAPH_THRESHOLD_MS, use_graph

# Tensor methods and calls that wait for the device (torch's sync debug mode flags each of them).
SYNC_METHODS = ("item", "cpu", "tolist", "numpy")
SYNC_CALLS = ("torch.cuda.synchronize",)


def decide_graph(mode: str, estimate_ms: float, refusal: Callable[[], str]) -> tuple[bool, str]:
    """(replay a CUDA graph?, why not when the mode asked for one). `refusal` is asked only when a graph
    would be used: "" = the launch can be captured, else why it cannot."""
    if not use_graph(mode, estimate_ms):
        return False, ""
    why = refusal()
    if not why:
        return True, ""
    asked = ("cuda_graph='on' asked for CUDA-graph replay" if mode == "on" else
             f"one call takes {estimate_ms * 1e3:.1f} us (< {GRAPH_THRESHOLD_MS * 1e3:.0f} us: auto replays a "
             "CUDA graph)")
    return False, f"timed without CUDA-graph capture, one call per sample: {asked}, but {why}"


def exception_text(e: BaseException, task_file: str = "") -> str:
    """The exception with every line of its message (torch's hints included) and, when a frame lies in
    the task file, the line of it that raised: `RuntimeError: ... | ... (at line 41 of task.py: `n = ...`)`."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    text = f"{type(e).__name__}: {' | '.join(lines)}" if lines else type(e).__name__
    frames = traceback.extract_tb(e.__traceback__)
    own = [f for f in frames if task_file and Path(f.filename).resolve() == Path(task_file).resolve()]
    if own:
        f = own[-1]
        text += f" (at line {f.lineno} of {Path(f.filename).name}: `{(f.line or '').strip()}`)"
    return text


def host_syncs(source: str, function: str = "launch") -> list[str]:
    """The calls in `function` (a top-level def of `source`) that synchronise with the host, as
    "line N: `x.item()`"; [] when there are none or no such function. A static hint: helpers it calls are
    not followed (the GPU probe sees those)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function), None)
    if fn is None:
        return []
    out = []
    for n in ast.walk(fn):
        if not isinstance(n, ast.Call):
            continue
        name = ast.unparse(n.func)
        if (isinstance(n.func, ast.Attribute) and n.func.attr in SYNC_METHODS) or name in SYNC_CALLS:
            out.append((n.lineno, f"line {n.lineno}: `{ast.unparse(n)}`"))
    return [text for _, text in sorted(set(out))]


def sync_refusal(e: BaseException, task_file: str, stage: str) -> str:
    """The reason a launch cannot be captured. `stage`: "synchronises with the host" (the probe under
    torch's sync debug mode raised) or "the capture failed"."""
    hint = ""
    if task_file:
        try:
            found = host_syncs(Path(task_file).read_text(encoding="utf-8"))
        except OSError:
            found = []
        if found:
            hint = f"; launch() calls {', '.join(found)}"
    return f"launch {stage}: {exception_text(e, task_file)}{hint}"
