"""A @triton.jit kernel's source, its jit helpers and the globals they use, ready to paste into a task."""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types
from typing import Any

from services.kpilot.capture.records import KernelSource


def raw_function(kernel: Any) -> types.FunctionType:
    """The Python function behind a JITFunction or an interpreter InterpretedFunction."""
    return kernel.fn


def is_kernel(value: Any) -> bool:
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    return isinstance(value, (JITFunction, InterpretedFunction))


def _def_source(fn: types.FunctionType) -> tuple[str, ast.FunctionDef]:
    src = textwrap.dedent(inspect.getsource(fn))
    node = next(n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef))
    lines = src.splitlines()
    return "\n".join(lines[node.lineno - 1 : node.end_lineno]) + "\n", node


def _global_line(name: str, value: Any) -> str | None:
    import triton.language as tl

    if isinstance(value, types.ModuleType):
        mod = value.__name__
        return f"import {mod}" if mod == name else f"import {mod} as {name}"
    if isinstance(value, tl.constexpr):
        return f"{name} = tl.constexpr({value.value!r})"
    if isinstance(value, (bool, int, float, str)) or value is None:
        return f"{name} = {value!r}"
    mod, qual = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if mod and qual and "." not in qual and mod != "__main__":
        return f"from {mod} import {qual}" + ("" if qual == name else f" as {name}")
    return None


def _free_names(node: ast.FunctionDef) -> set[str]:
    """Names the def's signature and body load. Not its decorators: the task replaces them (an autotune
    config list's comprehension variables and keyword dicts are not the kernel's globals); a parameter or
    local that shares a module global's name is dropped by the caller (fn.__code__.co_varnames)."""
    parts = [node.args, *node.body] + ([node.returns] if node.returns else [])
    return {n.id for part in parts for n in ast.walk(part) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def collect(kernel: Any) -> KernelSource:
    """The kernel first, then every jit function it reaches, with the import/constant lines they need."""
    functions: list[list[str]] = []
    preamble: list[str] = ["import torch", "import triton", "import triton.language as tl"]
    problems: list[str] = []
    seen: set[str] = set()
    todo = [kernel]
    while todo:
        k = todo.pop(0)
        fn = raw_function(k)
        if fn.__name__ in seen:
            continue
        seen.add(fn.__name__)
        text, node = _def_source(fn)
        functions.append([fn.__name__, text])
        for name in sorted(_free_names(node) - set(fn.__code__.co_varnames)):
            if name not in fn.__globals__:
                if not hasattr(builtins, name):
                    problems.append(f"{fn.__name__}: name {name!r} is not a global of its module")
                continue
            value = fn.__globals__[name]
            if is_kernel(value):
                todo.append(value)
                continue
            line = _global_line(name, value)
            if line is None:
                problems.append(f"{fn.__name__}: global {name!r} ({type(value).__name__}) cannot be copied")
            elif line not in preamble:
                preamble.append(line)
    return KernelSource(name=functions[0][0], functions=functions, preamble=preamble, problems=problems)
