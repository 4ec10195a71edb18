"""Reading and rewriting the CUDA C++ source string of a CUDA task (CUDA_SOURCE + KERNEL_NAME): the
Python file is edited on its syntax tree (LibCST), the C++ inside the string by anchored regular
expressions (no C++ parser ships with the project; the anchors are the declarations `__global__ void
NAME(` and `__shared__ T name[A][B];`, which have one spelling)."""

from __future__ import annotations

import ast

import libcst as cst

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
