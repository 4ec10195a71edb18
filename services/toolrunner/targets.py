"""Compile targets: "cuda:<capability>" strings and the GPU architecture names ptxas/nvcc take."""

from __future__ import annotations

import re

_TARGET = re.compile(r"^cuda:(\d{2,3})$")


def parse_target(target: str) -> int:
    """The compute capability of a "cuda:90"-style target; ValueError naming the fix otherwise."""
    m = _TARGET.match(target)
    if m is None:
        raise ValueError(f"target {target!r} is not of the form cuda:<capability>, e.g. cuda:90 (H100/H200)")
    cap = int(m.group(1))
    if cap < 75:
        raise ValueError(f"target {target!r}: Triton 3.6.0 builds for capability 75 and newer")
    return cap


def sm_arch(capability: int) -> str:
    """sm_90 -> sm_90a: Hopper's wgmma/TMA need the arch-specific "a" target (Triton uses the same rule,
    triton/backends/nvidia/compiler.py sm_arch_from_capability)."""
    return f"sm_{capability}{'a' if capability >= 90 else ''}"
