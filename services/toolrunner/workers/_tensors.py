"""Worker-side: the tensors a task call returned, for the correctness and honesty workers."""

from __future__ import annotations

from typing import Any


def output_tensors(value: Any) -> list[Any] | None:
    """A tensor or a non-empty tuple/list of tensors -> the list; anything else -> None."""
    import torch  # in the worker only: importing this module stays cheap

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return list(value)
    return None
