"""The decomposition record: what the decomposer learns about one compiled kernel from its text artifacts.

Input: `Artifacts` (TTGIR, PTX, SASS and `ptxas -v` text, as the `compile` and `sass` tools return them)
and `TaskFacts` (what the task and telemetry know: grid, FLOP/byte formulas evaluated at a shape, a
measured time, ncu counters). Output: `Decomposition` = typed nodes with hardware mapping and source line,
dataflow paths per tensor, layouts, SASS correlation per source line, ptxas resources, the roofline
classification, pattern findings (most important first) and a compact IR summary for prompts.
"""

from __future__ import annotations

from typing import Literal

import msgspec

NodeKind = Literal["compute", "memory", "sync", "tensor", "control"]
Severity = Literal["high", "medium", "low", "info"]
MemorySpace = Literal["global", "shared", "register", "tensor_core", "local"]
# Mirrors shared.tools.task.Precision: "exact" keeps fp32 dots in fp32, "allow_tf32" permits tf32.
Precision = Literal["exact", "allow_tf32"]
# Mirrors shared.messages.ChangeKind: the change-description kinds a finding says would address it.
Transformation = Literal[
    "set_constexpr", "set_num_warps", "set_num_stages", "set_maxnreg", "set_grid", "add_hint", "source_edit",
    "transform",
]


class Artifacts(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Text outputs of the compile/sass tools for one kernel. Only `ttgir` is required."""

    ttgir: str
    kernel: str = ""  # defaults to the first public tt.func in the TTGIR
    ptx: str = ""
    sass: str = ""  # `nvdisasm --print-line-info -c` (line info) or `cuobjdump -sass` text
    ptxas_info: str = ""  # `ptxas -v` stderr
    shared_bytes: int | None = None  # compile metadata `shared` (dynamic smem); None = estimate from TTGIR
    num_stages: int | None = None  # compile option, when known


class DynamicEvidence(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Measured counters for this kernel. Names are ncu metric names (GPU.md) or NVML field names."""

    ncu: dict[str, float] = {}
    nvml: dict[str, float] = {}


class DeviceFacts(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """H200 facts from /work/shared/GPU.md (copy ceiling and bf16 ceiling are measured there)."""

    name: str = "H200"
    sms: int = 132
    copy_bytes_per_s: float = 4.35e12  # measured torch.add 2^28 fp32
    bf16_flops_per_s: float = 784e12  # measured torch.matmul 8192^3
    fp32_flops_per_s: float = 67e12  # vendor datasheet (H100/H200 SXM fp32 non-tensor), not measured
    # measured: the shortest kernel time, ncu gpu__time_duration of the corpus's tiny_add (4 programs of
    # 128 threads, 48 KB) on the H200, 2.368 us in runs 9 and 10 (tests/fixtures/h200/decomposer_ncu): the
    # launch, first-load and drain time every kernel pays on top of its bytes / copy bandwidth
    min_kernel_s: float = 2.368e-6
    max_warps_per_sm: int = 64
    max_blocks_per_sm: int = 32
    regs_per_sm: int = 65536
    smem_per_sm: int = 233472  # 228 KB
    smem_per_block_optin: int = 232448  # 227 KB


class TaskFacts(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What the caller knows beyond the artifacts. Every field is optional: absent means unknown."""

    grid: list[int] = []  # launch grid (programs per axis) at the analysed shape
    block: list[int] = []  # CUDA C++: threads per block [x, y, z] the launch passes (Triton: num_warps)
    # CUDA C++: references to the compiled copy (`<scratch>/<kernel>.cu:N`) are rewritten to
    # `source_file:(source_line + N - 1)`, the task file where CUDA_SOURCE opens; "" keeps them as they are.
    source_file: str = ""
    source_line: int = 0
    flops: float | None = None  # task FLOP formula at the shape
    bytes_moved: float | None = None  # task byte formula at the shape
    dtype: str = ""  # dominant compute dtype: "bfloat16", "float32", ...
    measured_s: float | None = None  # median kernel time at the shape
    precision: Precision = "exact"
    kernels_in_task: int = 1  # kernels launched per step of the task (> 1: fusion candidates)
    dynamic: DynamicEvidence | None = None
    device: DeviceFacts = msgspec.field(default_factory=DeviceFacts)


class Location(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    file: str
    line: int
    col: int = 0


class Node(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One TTGIR operation, typed and mapped to the hardware unit that executes it."""

    id: int  # position in the TTGIR function body
    op: str  # "tt.load", "arith.addf", ...
    kind: NodeKind
    unit: str  # "global LSU", "FP32 ALU", "tensor core (wgmma)", ...
    result: str = ""  # SSA name
    dtype: str = ""  # element type of the result ("bf16", "f32", ...)
    shape: list[int] = []
    layout: str = ""  # layout alias of the result ("#blocked1", "#mma") or memdesc layout
    loc: Location | None = None
    loop_depth: int = 0
    loop: int | None = None  # node id of the innermost enclosing scf.for/while


class LayoutInfo(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A TTGIR layout attribute, decoded. Fields that do not apply to the kind stay empty."""

    name: str  # "#blocked1"
    kind: str  # "blocked", "swizzled_shared", "nvmma_shared", "nvidia_mma", "shared_memory", ...
    size_per_thread: list[int] = []
    threads_per_warp: list[int] = []
    warps_per_cta: list[int] = []
    order: list[int] = []
    vec: int | None = None  # swizzled_shared
    per_phase: int | None = None
    max_phase: int | None = None
    swizzle_bytes: int | None = None  # nvmma_shared swizzlingByteWidth
    transposed: bool | None = None
    mma_version: int | None = None  # nvidia_mma versionMajor (2 = mma.sync, 3 = wgmma)
    instr_shape: list[int] = []


class DataflowStep(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    node: int
    op: str
    space: MemorySpace
    layout: str = ""
    vector_bytes: int | None = None  # bytes per thread per access, from the layout and element size
    contiguous: bool | None = None  # fastest layout dim has unit stride in the address
    line: int | None = None


class DataflowPath(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One tensor's way through the kernel: alloc -> load -> compute -> store, with the space at each step."""

    tensor: str  # source-level name from loc("name"(...)) or the SSA name
    steps: list[DataflowStep]
    loop: int | None = None  # node id of the loop the first memory step sits in
    loop_line: int | None = None


class SassLine(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """SASS instructions attributed to one source line (nvdisasm line info)."""

    file: str
    line: int
    instructions: int = 0
    first_addr: str = ""  # "0x01b0"
    ldg_bits: list[int] = []  # width of each global load (32 = scalar fp32, 128 = vector)
    stg_bits: list[int] = []
    tensor_instrs: list[str] = []  # distinct HGMMA/HMMA/... opcodes
    barriers: int = 0
    shared_accesses: int = 0
    local_accesses: int = 0  # LDL/STL: spills or stack arrays
    atomics: int = 0


class PtxasInfo(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    registers: int | None = None
    spill_stores: int = 0  # bytes
    spill_loads: int = 0  # bytes
    stack_frame: int = 0  # bytes
    barriers: int = 0
    smem_bytes: int = 0  # static shared memory only; Triton's is dynamic (Artifacts.shared_bytes)
    cmem_bytes: int = 0


class Roofline(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    bound: Literal["memory", "compute", "unknown"]
    flops: float | None = None
    bytes_moved: float | None = None
    intensity: float | None = None  # FLOP per byte
    ridge: float | None = None  # FLOP per byte where the roofs meet for the compute dtype
    peak_flops_per_s: float | None = None
    floor_s: float | None = None  # lower bound on time from the binding roof
    measured_s: float | None = None
    fraction_of_roof: float | None = None  # floor_s / measured_s
    note: str = ""  # "not measured: no GPU" etc.


class Finding(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pattern: str
    severity: Severity
    score: float  # estimated share of time at stake, 0..1: orders findings within a severity
    locations: list[str] = []  # "file:line", "sass:0x01b0"
    evidence: list[str] = []
    transformations: list[Transformation] = []
    # A transformation of shared/transforms/ that answers it, by name, when its precondition holds here
    fix_transform: str = ""
    saves_s: float | None = None  # time it can plausibly save (services/decomposer/cost.py); None = unknown
    cost: str = ""  # how saves_s was reached: measured or modelled, and from what


class Unchecked(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A pattern the decomposer could not check on this kernel, and what it would need."""

    pattern: str
    needs: list[str] = []  # "grid", "ptxas", "sass", "ptx", "costs", "measured", "ncu"
    reason: str = ""


class Decomposition(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kernel: str
    target: str  # "cuda:90"
    num_warps: int
    nodes: list[Node]
    layouts: list[LayoutInfo] = []
    paths: list[DataflowPath] = []
    sass_lines: list[SassLine] = []
    ptxas: PtxasInfo | None = None
    roofline: Roofline
    findings: list[Finding] = []  # most important first
    summary: str = ""  # compact IR summary for prompts
    summary_tokens: int = 0
    token_rule: str = ""
    warnings: list[str] = []  # what could not be read, e.g. "no SASS given: SASS correlation skipped"
    unchecked: list[Unchecked] = []  # patterns not checked (missing evidence): absent != checked and clean


class DecomposeInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A `decomposer.analyze` request body."""

    artifacts: Artifacts
    facts: TaskFacts = msgspec.field(default_factory=TaskFacts)
