"""ncu_profile and sanitize tool records (GPU only)."""

from __future__ import annotations

from typing import Literal

import msgspec

from shared.messages import Provenance, Resource, Scalar

ShapeName = str  # "micro", "full" or "edge:<i>" (shared.tools.task.TaskManifest.shape)


class NcuProfileInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    kernel: str = ""  # the Triton kernel to profile; "" = the task's first kernel
    shape: ShapeName = "micro"
    config: dict[str, Scalar] = {}  # overrides of the task's CONFIG
    seed: int = 0
    extra_metrics: list[str] = []  # ncu metric names on top of the state-dimension set
    gpu: int = 0  # CUDA device index
    timeout_s: float = 600.0
    # Where the .ncu-rep is kept (the sandbox scratch is deleted); "" = <tmp>/kpilot-artifacts/ncu.
    artifact_dir: str = ""


class NcuMetric(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    value: float | None  # None when ncu printed text ("n/a", "(128, 1, 1)", "PolicySpread")
    unit: str = ""
    text: str = ""  # the cell as ncu printed it


class ProfileValue(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One figure of a GPU.md state dimension, with the ncu metrics it came from."""

    resource: Resource
    name: str  # e.g. "load_sectors_per_request"
    value: float
    unit: str
    source: str  # "ncu:<metric>" or "ncu:<a>/<b>"


class AbsentValue(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A figure no metric gave: absent with the reason, never 0."""

    resource: Resource
    name: str
    reason: str


class NcuKernelProfile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kernel: str  # the name ncu printed
    device: str = ""  # device__attribute_display_name, e.g. "NVIDIA H200"
    block: str = ""  # "(128, 1, 1)"
    grid: str = ""
    duration_ns: float | None = None  # gpu__time_duration.sum, under --clock-control none
    values: list[ProfileValue] = []
    absent: list[AbsentValue] = []
    metrics: dict[str, NcuMetric] = {}  # every non-device column ncu printed for this kernel


class NcuProfileOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    profile: NcuKernelProfile
    report_path: str | None = None  # the .ncu-rep artifact (open with `ncu --import` or ncu_report)
    command: list[str] = []
    metrics_requested: list[str] = []
    metrics_unavailable: list[str] = []  # requested but not offered by this ncu/device
    ncu_version: str = ""
    provenance: Provenance = msgspec.field(default_factory=Provenance)


SanitizerTool = Literal["memcheck", "racecheck", "initcheck", "synccheck"]


class SanitizeInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    tools: list[SanitizerTool] = msgspec.field(default_factory=lambda: ["memcheck", "racecheck"])
    kernel: str = ""  # restrict checking to this kernel; "" = every kernel the launch runs
    shape: ShapeName = "micro"
    config: dict[str, Scalar] = {}
    seed: int = 0
    gpu: int = 0
    timeout_s: float = 600.0  # per sanitizer tool


class SanitizerFinding(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kind: str  # "Invalid __global__ read of size 4 bytes", "Race reported between ...", ...
    kernel: str = ""  # from the "at <fn>+0x.. in <file>:<line>" frame, when printed
    location: str = ""  # "<file>:<line>" of that frame
    lines: list[str] = []  # the block's lines as printed, "=========" prefix removed


class SanitizerReport(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    tool: SanitizerTool
    verdict: Literal["clean", "errors", "failed"]  # failed = the sanitizer or the program broke
    errors: int | None  # the ERROR SUMMARY count; None when no summary was printed
    warnings: int | None = None  # racecheck's warning count
    findings: list[SanitizerFinding] = []  # the first few, in order
    program_exit_code: int | None = None
    message: str = ""  # why "failed", or the last words of a broken run


class SanitizeOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    verdict: Literal["clean", "errors", "failed"]  # worst over the reports
    reports: list[SanitizerReport]
    sanitizer_version: str = ""
    provenance: Provenance = msgspec.field(default_factory=Provenance)
