"""The records telemetry moves around before they become bus messages.

A sampler returns a `RawSample` (device-wide readings of one GPU at one instant); the launch SDK returns
`LaunchRecord`s (per-kernel launch counts, grids, configs and sampled durations). Both are tagged with a
`type` field so a trace file (trace.py) can hold them line by line. Units are normalised here once:
percentages are "pct" (0-100), link bandwidths "GB/s" (1e9 bytes/s), clocks "MHz", power "W", memory
"MiB", so NVML and DCGM readings of the same dimension compare directly.
"""

from __future__ import annotations

from typing import Protocol

import msgspec

from shared.messages import AbsentDimension, Resource, Scalar


class RawMetric(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One reading: a resource at a place, in a unit, from a named source ("nvml_gpm:5", "dcgm:1004")."""

    resource: Resource
    value: float
    unit: str
    source: str
    space: str = "global_avg"


class RawSample(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, tag="sample", tag_field="type"):
    """Device-wide readings of one GPU. `window_s` is the span the counters average over."""

    ts: float
    node: str
    gpu: str  # the GPU's UUID, or its index as a string where no UUID is known
    gpu_name: str = ""
    window_s: float = 0.0
    metrics: list[RawMetric] = []
    # Decoded NVML clocks-event reasons active now: [] = none active, None = this sampler could not read them.
    clock_event_reasons: list[str] | None = None
    absent: list[AbsentDimension] = []  # what this sampler cannot give here, with the reason

    def get(self, resource: str, space: str = "global_avg") -> RawMetric | None:
        for m in self.metrics:
            if m.resource == resource and m.space == space:
                return m
        return None

    def value(self, resource: str, space: str = "global_avg") -> float | None:
        m = self.get(resource, space)
        return None if m is None else m.value


class LaunchRecord(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, tag="launch", tag_field="type"):
    """Launches of one kernel with one grid and config between two drains.

    `durations_us` holds only the sampled launches (CUDA events on a fraction of launches); it is empty
    when none was timed, never filled with guesses.
    """

    kernel: str
    launches: int
    t_first: float
    t_last: float
    gpu: str = ""  # the GPU's UUID when the workload knows it; "" = every GPU of the node
    grid: list[int] = []
    config: dict[str, Scalar] = {}  # num_warps, num_stages, num_ctas and the constexpr values
    durations_us: list[float] = []


class SamplerUnavailable(RuntimeError):
    """The sampler cannot run here (no GPU, no NVML, no exporter); the message says what to use instead."""


class Sampler(Protocol):
    """What the telemetry service calls once per period."""

    def sample(self) -> list[RawSample]:
        """One RawSample per GPU this sampler watches."""
        ...

    def close(self) -> None: ...
