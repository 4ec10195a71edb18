"""The records of the transformation library: a transformation's spec (what the table lists), a refusal
(a precondition that does not hold, with the reason) and an applied result (the candidate source + diff).

A transformation is deterministic: the same source and parameters give the same bytes. It reads the
source only (LibCST), never runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import msgspec

from shared.messages import Scalar

Language = Literal["triton", "cuda"]


class Param(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One parameter of a transformation. With `constexpr` set, the value is written into the candidate's
    CONFIG (and its domain into SPACE) under that name, so the config search tunes it like any knob."""

    name: str
    domain: list[Scalar]
    default: Scalar
    constexpr: str = ""
    doc: str = ""


class TransformSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the table says of one transformation (`kpilot transforms --json`, the llm policy's menu)."""

    name: str
    summary: str
    answers: list[str]  # decomposer pattern ids (services/decomposer/patterns.py) this transformation fixes
    params: list[Param] = []
    language: Language = "triton"
    precondition: str = ""  # what must hold in the source, in words


class Refused(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    transform: str
    reason: str  # the precondition that failed, saying what the source would need


class Applied(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    transform: str
    params: dict[str, Scalar]
    source: str  # the complete candidate task file
    diff: str  # unified diff parent -> candidate
    kernel: str = ""  # the kernel rewritten ("" for a whole-file or CUDA C++ rewrite)


class TransformError(Exception):
    """Raised inside a rewrite when a precondition fails; `apply()` turns it into `Refused`."""


@dataclass(frozen=True)
class Transform:
    """One table row: its spec and its rewrite (source, params, kernel name or "") -> new source. The
    rewrite checks its precondition first and raises TransformError naming what does not hold."""

    spec: TransformSpec
    rewrite: Callable[[str, dict[str, Scalar], str], str]
