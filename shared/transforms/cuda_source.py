"""Reading and rewriting the CUDA C++ source string of a CUDA task (CUDA_SOURCE + KERNEL_NAME): the
Python file is edited on its syntax tree (LibCST), the C++ inside the string by anchored regular
expressions (no C++ parser ships with the project; the anchors are the declarations `__global__ void
NAME(` and `__shared__ T name[A][B];`, which have one spelling)."""

from __future__ import annotations

import ast
import re

import libcst as cst
import msgspec

from shared.transforms import code as C
from shared.transforms.base import TransformError


def source_of(mod: cst.Module) -> tuple[cst.SimpleString, str, str]:
    """(the CUDA_SOURCE string node, its C++ text, KERNEL_NAME)."""
    got = C.top_assign(mod, "CUDA_SOURCE")
    if got is None or not isinstance(got[1].value, cst.SimpleString):
        raise TransformError("not a CUDA C++ task: no literal CUDA_SOURCE = r\"\"\"...\"\"\" string")
    node = got[1].value
    name = C.top_assign(mod, "KERNEL_NAME")
    if name is None or not isinstance(name[1].value, cst.SimpleString):
        raise TransformError("the CUDA task has no literal KERNEL_NAME = \"...\"")
    return node, ast.literal_eval(node.value), ast.literal_eval(name[1].value.value)


def with_text(node: cst.SimpleString, text: str) -> cst.SimpleString:
    prefix = node.prefix
    quote = node.quote
    if quote in ('"""', "'''") and quote not in text and ("r" in prefix or "\\" not in text):
        return node.with_changes(value=f"{prefix}{quote}{text}{quote}")
    raise TransformError("the rewritten CUDA source cannot be written back as the same string literal")


class KernelText(msgspec.Struct, frozen=True, kw_only=True):
    """Where the `__global__ void NAME(...) { ... }` of CUDA_SOURCE lies: its parameter list (name ->
    declared type, e.g. "in" -> "const float* __restrict__") and the body between its braces."""

    params: dict[str, str]
    body_start: int  # index just after the opening `{`
    body_end: int  # index of the closing `}`


def _close(text: str, i: int, pair: str) -> int:
    """Index of the bracket closing the one at text[i] (pair is "()", "[]" or "{}"); comments are skipped."""
    depth = 0
    j = i
    while j < len(text):
        if text.startswith("//", j):
            j = text.find("\n", j)
            if j < 0:
                break
            continue
        if text.startswith("/*", j):
            j = text.find("*/", j)
            if j < 0:
                break
            j += 2
            continue
        ch = text[j]
        if ch == pair[0]:
            depth += 1
        elif ch == pair[1]:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise TransformError(f"unbalanced {pair!r} in CUDA_SOURCE from offset {i}")


def kernel_text(text: str, name: str) -> KernelText:
    m = re.search(rf"__global__\s+void\s+(?:__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\)\s*)?"
                  rf"{re.escape(name)}\s*\(", text)
    if m is None:
        raise TransformError(f"CUDA_SOURCE declares no `__global__ void {name}(`")
    close = _close(text, m.end() - 1, "()")
    params: dict[str, str] = {}
    for p in text[m.end(): close].split(","):
        p = p.strip()
        got = re.fullmatch(r"(.*?)\b(\w+)", p, re.DOTALL)
        if got is None:
            raise TransformError(f"cannot read the kernel parameter {p!r}")
        params[got.group(2)] = " ".join(got.group(1).split())
    brace = text.find("{", close)
    if brace < 0 or text[close + 1: brace].strip():
        raise TransformError(f"{name}'s declaration is not followed by its body `{{`")
    return KernelText(params=params, body_start=brace + 1, body_end=_close(text, brace, "{}"))
