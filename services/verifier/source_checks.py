"""Pure checks of a candidate task file's source against its task's: parsed with `ast`, never run.

Two rules, both diffs against the task file (what the task itself does is never held against a candidate):

- The harness is the task's. `make_inputs`, `reference`, `SHAPES`, `DTYPE`, `TOLERANCE`, ... and every
  top-level name they use are the contract: run_correctness checks the candidate's make_inputs only at the
  micro and edge shapes (the input digest), while the full layer benchmarks the candidate file's own
  SHAPES["full"] and make_inputs. A candidate that shrinks the benchmarked shape, or builds other inputs at
  it, is timed on other work.
- No capability a kernel candidate never needs. A launcher needs torch, triton and arithmetic; a candidate
  that imports `os`/`sys`/`atexit`/`threading`, names `open`/`eval`/`__import__`, or reads
  `os.environ`/`sys.modules`/`torch.cuda.is_current_stream_capturing` can tell the checks from the
  benchmark (which worker imported it, the interpreter's environment variable, a graph capture) or act
  outside the call (at exit, from another thread, through files): behaviour that looked honest while
  watched proves nothing then. The funnel asks this after the behavioural checks passed, so a cheat they
  catch is named by what it did.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# The task file's contract with the harness (examples/README.md): what every tool builds inputs, checks
# and sizes the benchmark with. KernelBench files carry theirs as Model/get_inputs/get_init_inputs.
HARNESS = (
    "make_inputs", "reference", "flops", "bytes_moved", "SHAPES", "DTYPE", "CPU_DTYPE", "TOLERANCE",
    "PRECISION", "INPLACE", "Model", "get_inputs", "get_init_inputs",
)
# Modules a kernel candidate may import beyond the task's own imports: compute and plain data helpers.
ALLOWED_MODULES = (
    "torch", "triton", "numpy", "math", "functools", "itertools", "operator", "typing", "dataclasses",
    "collections", "enum", "__future__",
)
# Parts of the allowed packages that reach into dispatch, the interpreter or other processes.
DENIED_SUBMODULES = (
    "torch._C", "torch._dynamo", "torch.library", "torch.overrides", "torch.utils._python_dispatch",
    "torch.multiprocessing", "torch.distributed",
)
# Builtins that run dynamic code, reach files or rewrite namespaces.
DYNAMIC_BUILTINS = (
    "__import__", "eval", "exec", "compile", "open", "globals", "locals", "vars", "breakpoint", "setattr",
    "delattr",
)
# Attributes that read the process, the harness or torch's execution state, or rewrite code objects.
INTROSPECTION_ATTRS = (
    "environ", "getenv", "argv", "orig_argv", "modules", "_getframe", "_current_frames", "f_back",
    "f_locals", "f_globals", "tb_frame", "get_objects", "get_referrers", "is_current_stream_capturing",
    "is_grad_enabled", "is_inference_mode_enabled", "_C", "library", "__code__", "__globals__",
    "__builtins__", "__closure__", "__subclasses__", "__torch_function__", "__torch_dispatch__",
)
# Methods that run outside the call: at garbage collection or exit, on any tensor op, on module lookups.
HOOK_METHODS = ("__del__", "__torch_function__", "__torch_dispatch__", "__getattr__", "__getattribute__")
MAX_REASONS = 4


@dataclass(frozen=True)
class Use:
    what: str  # "imports os", "uses open", "uses .environ", "defines __del__"
    line: int


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None  # the compile tool reports it, with its line


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _touched(stmt: ast.stmt) -> set[str]:
    """Top-level names a statement binds or changes (`X = ...`, `X[k] = ...`, `X.update(...)`, def X)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.Expr):
        return {r} if (r := _root(stmt.value)) else set()
    names = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif (isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del))
              and (r := _root(node))):
            names.add(r)
    return names


def _definitions(tree: ast.Module) -> dict[str, list[tuple[str, ast.stmt]]]:
    """Per top-level name, its binding statements in order as (comparable text, statement). An import
    counts per bound name (`import torch, triton` binds torch as `import torch` does)."""
    out: dict[str, list[tuple[str, ast.stmt]]] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            src = f"from {'.' * stmt.level}{stmt.module or ''} " if isinstance(stmt, ast.ImportFrom) else ""
            for a in stmt.names:
                bound = (a.asname or a.name).split(".")[0]
                out.setdefault(bound, []).append((f"{src}import {a.name} as {a.asname or bound}", stmt))
            continue
        rebound = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for name in _touched(stmt):
            # `torch.cuda.synchronize = ...` patches the module, it does not rebind the harness's `torch`:
            # the honesty probe's monkey_patch check names that.
            if name in out and out[name][0][0].startswith(("import ", "from ")) and name not in rebound:
                continue
            out.setdefault(name, []).append((ast.dump(stmt), stmt))
    return out


def _closure(defs: dict[str, list[tuple[str, ast.stmt]]]) -> set[str]:
    """The harness names and every top-level name their definitions use, transitively."""
    todo, seen = [n for n in HARNESS if n in defs], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for _, stmt in defs.get(name, []):
            todo += [n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id in defs and n.id not in seen]
    return seen


def harness_changes(candidate: str, task: str) -> list[str]:
    """Reasons the candidate's harness is not the task's ([] = it is, or a file does not parse)."""
    c_tree, t_tree = _parse(candidate), _parse(task)
    if c_tree is None or t_tree is None:
        return []
    c_defs, t_defs = _definitions(c_tree), _definitions(t_tree)
    names = sorted(_closure(t_defs) | _closure(c_defs))
    reasons = []
    for name in names:
        c = [text for text, _ in c_defs.get(name, [])]
        t = [text for text, _ in t_defs.get(name, [])]
        if c == t:
            continue
        where = c_defs[name][-1][1].lineno if name in c_defs else None
        how = "missing" if where is None else f"line {where} differs"
        reasons.append(
            f"harness changed: {name} is not the task's ({how}): the checks build inputs and the benchmark "
            "sizes its work from the task's harness, so a candidate may change its kernels, launch and "
            "CONFIG only"
        )
    return reasons[:MAX_REASONS]


def _module_allowed(module: str) -> bool:
    if any(module == d or module.startswith(d + ".") for d in DENIED_SUBMODULES):
        return False
    return module.split(".")[0] in ALLOWED_MODULES


def uses(tree: ast.Module) -> list[Use]:
    """Every use of a capability a kernel candidate never needs, in source order."""
    out: list[Use] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [Use(f"imports {a.name}", node.lineno) for a in node.names if not _module_allowed(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not _module_allowed(node.module):
                out.append(Use(f"imports {node.module}", node.lineno))
            else:
                out += [Use(f"imports {node.module}.{a.name}", node.lineno) for a in node.names
                        if not _module_allowed(f"{node.module}.{a.name}")]
        elif isinstance(node, ast.Name) and node.id in DYNAMIC_BUILTINS:  # a call or an alias (f = open)
            out.append(Use(f"uses {node.id}", node.lineno))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
              and node.args[1].value in INTROSPECTION_ATTRS):
            out.append(Use(f"uses .{node.args[1].value}", node.lineno))
        elif isinstance(node, ast.Attribute) and node.attr in INTROSPECTION_ATTRS:
            out.append(Use(f"uses .{node.attr}", node.lineno))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in HOOK_METHODS:
            out.append(Use(f"defines {node.name}", node.lineno))
    return sorted(out, key=lambda u: (u.line, u.what))


def capability_findings(candidate: str, task: str) -> list[str]:
    """Reasons naming each capability the candidate uses more often than the task does ([] = none)."""
    c_tree, t_tree = _parse(candidate), _parse(task)
    if c_tree is None or t_tree is None:
        return []
    task_count: dict[str, int] = {}
    for u in uses(t_tree):
        task_count[u.what] = task_count.get(u.what, 0) + 1
    seen: dict[str, int] = {}
    new: list[Use] = []
    for u in uses(c_tree):
        seen[u.what] = seen.get(u.what, 0) + 1
        if seen[u.what] > task_count.get(u.what, 0) and all(n.what != u.what for n in new):
            new.append(u)
    reasons = [
        f"source: {u.what} (line {u.line}), which the task does not: a kernel candidate needs torch, triton "
        "and arithmetic only; this can tell the checks from the benchmark or act outside the call"
        for u in new[:MAX_REASONS]
    ]
    if len(new) > MAX_REASONS:
        reasons.append(f"source: ... and {len(new) - MAX_REASONS} more such uses")
    return reasons
