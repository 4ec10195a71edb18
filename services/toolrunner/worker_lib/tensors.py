"""Worker-side: the tensors a task call returned, for the correctness and honesty workers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def output_tensors(value: Any) -> list[Any] | None:
    """A tensor or a non-empty tuple/list of tensors -> the list; anything else -> None."""
    import torch  # in the worker only: importing this module stays cheap

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return list(value)
    return None


def inplace_problem(inplace: Sequence[int], inputs: Any) -> str:
    """Why the task's INPLACE indices do not fit the inputs make_inputs built ("" = they fit)."""
    import torch

    n = len(inputs) if isinstance(inputs, (tuple, list)) else 1
    for i in inplace:
        if not 0 <= i < n:
            return f"INPLACE index {i} is out of range: make_inputs returned {n} inputs (indices 0..{n - 1})"
        if not isinstance(inputs[i], torch.Tensor):
            return f"INPLACE index {i} is a {type(inputs[i]).__name__}, not a tensor launch() can write"
    return ""


def call_outputs(value: Any, inputs: Any, inplace: Sequence[int], role: str) -> list[Any] | None:
    """What a call produced (examples/README.md, "In-place outputs"). Without INPLACE: the tensors it
    returned. With INPLACE, launch: the declared inputs after the call, in INPLACE order, then the tensors
    it returned that are not one of them (None = nothing more); reference: the tensors it returned (the
    expected values in that same order), or, when it returned None, the declared inputs it wrote."""
    if not inplace:
        return output_tensors(value)
    written = [inputs[i] for i in inplace]
    if role == "reference":
        return written if value is None else output_tensors(value)
    if value is None:
        return written
    returned = output_tensors(value)
    if returned is None:
        return None
    return written + [t for t in returned if not any(t is w for w in written)]


def declared_indices(inputs: Any, inplace: Sequence[int]) -> list[int]:
    """INPLACE and every other input that is the same tensor as a declared one (f(x, y, y) in place: y
    is passed twice, declared once): the inputs a call may write without it counting as a side effect."""
    items = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
    declared = [items[i] for i in inplace if 0 <= i < len(items)]
    return sorted({*inplace, *(i for i, x in enumerate(items) if any(x is d for d in declared))})
