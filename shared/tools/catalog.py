"""The tool contracts: name, version, input and output records, and whether a GPU is needed.

The toolrunner binds an implementation to each contract; the planner offers them to policies as
JSON-Schema function specs; `schemas/tools/` is generated from here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ToolContract:
    name: str
    version: str
    description: str
    input: type
    output: type
    needs_gpu: bool = False


CONTRACTS: tuple[ToolContract, ...] = ()
