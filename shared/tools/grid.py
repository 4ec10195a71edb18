"""Records of the `launch_grid` tool: how many programs each Triton launch of a task runs, per config.

The grid is whatever the task's `launch()` computes (often `triton.cdiv(cols, BLOCK_N)`), so only running
it tells. The tool runs `launch()` on PyTorch's meta device (shapes, no memory, no kernel runs) with the
Triton launch replaced by a recorder, at a named shape: the full shape's grid costs nothing to learn.
"""

from __future__ import annotations

import msgspec

from shared.messages import Scalar

MAX_CONFIGS = 10_000  # per request (~0.8 MB of answer, under the 8 MB NATS max_payload); more: in parts


class LaunchGridInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    configs: list[dict[str, Scalar]] = []  # overrides of the task's CONFIG; empty = CONFIG alone
    shape: str = "full"  # a named shape of the task: "micro", "full", "edge:<i>"
    timeout_s: float = 120.0


class ConfigGrid(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One config's launches, in launch order (compact: matmul's 6,000 configs answer in 489 KB)."""

    kernels: list[str] = []
    grids: list[list[int]] = []  # one [x, y, z] per launch
    programs: list[int] = []  # x * y * z per launch
    blocks: list[list[int]] = []  # CUDA C++ launches: threads per block [x, y, z] (Triton: num_warps)
    error: str = ""  # why this config's launch() could not be recorded


class LaunchGridOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    shape: dict[str, Scalar]
    results: list[ConfigGrid]  # one per requested config, in request order (just CONFIG when none)
    method: str
