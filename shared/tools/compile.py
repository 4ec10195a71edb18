"""Input and output records of the `compile` tool: a task's kernel -> TTIR, TTGIR, LLIR, PTX, cubin.

Artifacts are kept by content hash in an artifact store; the record carries their hashes and sizes (and
their text when asked for), so a result stays small on the bus while every byte stays retrievable.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from shared.messages import Scalar

ArtifactKind = Literal["source", "ttir", "ttgir", "llir", "ptx", "cubin"]
TEXT_KINDS: tuple[str, ...] = ("source", "ttir", "ttgir", "llir", "ptx")


class CompileInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    kernel: str = ""  # "" = the task's primary kernel
    # Overrides of the task's CONFIG (same keys); {} compiles the task's starting config.
    config: dict[str, Scalar] = {}
    target: str = "cuda:90"  # "cuda:<capability>"; 90 builds sm_90a (wgmma, TMA)
    # The named shape whose launch arguments decide Triton's specialization (ints equal to 1, pointer and
    # int divisibility by 16): "micro", "full" or "edge:<i>".
    shape: str = "full"
    include_text: bool = False  # put the text artifacts into the record, not only their hashes


class Artifact(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kind: ArtifactKind
    sha256: str  # the key in the artifact store
    size: int  # bytes
    text: str | None = None  # present when the input asked for it (never for the binary cubin)


class ToolVersion(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str  # "triton", "ptxas", "nvcc", "torch"
    version: str
    path: str = ""


class ParamSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One kernel parameter as Triton's JIT specialized it for the launch."""

    name: str
    type: str  # "*fp32", "i32", "fp32", "constexpr", ...
    value: Scalar | None = None  # constexprs and specialized-to-constant ints
    divisible_by_16: bool = False  # Triton's tt.divisibility = 16 hint (aligned pointer, int % 16 == 0)


class CompileOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    task_sha256: str
    kernel: str
    kind: Literal["triton", "cuda"]
    target: str
    arch: str  # what ptxas/nvcc built: "sm_90a"
    config: dict[str, Scalar]  # the effective config (task CONFIG with the overrides applied)
    shape: str
    shape_values: dict[str, int]
    artifacts: list[Artifact]
    kernel_names: list[str]  # entry functions in the binary (PTX .entry names)
    params: list[ParamSpec] = []  # Triton only
    # Triton's own serialized specialization (JITFunction.preload input): replays this exact compile.
    specialization: str = ""
    inputs_device: str = ""  # Triton: device of the launch arguments the signature came from ("meta", "cpu")
    shared_bytes: int | None = None  # Triton's shared-memory allocation for the kernel
    num_warps: int | None = None
    tool_versions: list[ToolVersion] = []
    compile_s: float
    cache_key: str  # sha256 over everything that can change the output

    def artifact(self, kind: str) -> Artifact:
        for a in self.artifacts:
            if a.kind == kind:
                return a
        raise KeyError(f"no {kind} artifact; this compile has {[a.kind for a in self.artifacts]}")
