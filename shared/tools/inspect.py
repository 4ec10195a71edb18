"""Records of the static inspection tools (ptxas_info, ...): what the assembler says about a kernel."""

from __future__ import annotations

from typing import Literal

import msgspec

from shared.messages import Scalar
from shared.tools.compile import ToolVersion


class PtxasInfoInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Same addressing as CompileInput: the kernel is compiled (cached) and its PTX assembled by ptxas -v."""

    task_path: str
    kernel: str = ""  # "" = the task's primary kernel
    config: dict[str, Scalar] = {}  # overrides of the task's CONFIG
    target: str = "cuda:90"
    shape: str = "full"


class ConstantBank(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    bank: int  # cmem[<bank>]; bank 0 holds kernel parameters
    bytes: int


class KernelResources(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One function as ptxas -v reports it. Sizes are bytes per thread unless said otherwise."""

    name: str
    is_entry: bool  # a kernel (__global__ / .entry), not a device function
    arch: str = ""  # "sm_90a"
    registers: int | None = None  # per thread; None for device functions (ptxas reports entries only)
    spill_stores_bytes: int = 0
    spill_loads_bytes: int = 0
    stack_frame_bytes: int = 0
    cumulative_stack_bytes: int | None = None  # stack including callees, when ptxas reports it
    shared_bytes: int = 0  # static shared memory per block (Triton's is dynamic: see dynamic_shared_bytes)
    constant: list[ConstantBank] = []  # per-kernel banks (cuobjdump -res-usage); bank 0 = parameters
    barriers: int | None = None  # named barriers used per block

    @property
    def spills(self) -> bool:
        return self.spill_stores_bytes > 0 or self.spill_loads_bytes > 0


class PtxasReport(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What one ptxas -v run printed, parsed."""

    functions: list[KernelResources] = []
    global_bytes: int = 0  # module-level __device__ data (gmem)
    # Module-level constant banks (cuobjdump "Common": user __constant__ data, compiler constants).
    module_constant: list[ConstantBank] = []
    messages: list[str] = []  # ptxas warnings and performance advisories, e.g. "(C7511) ... serialized"


class PtxasInfoOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    kernel: str
    target: str
    arch: str
    config: dict[str, Scalar]
    report: PtxasReport
    # Triton allocates shared memory dynamically at launch, which ptxas does not see: from the compile.
    dynamic_shared_bytes: int | None = None
    ptxas: ToolVersion
    command: list[str]  # the ptxas command line (scratch paths shortened to file names)
    ptx_sha256: str
    compile_cache_key: str
    cache_key: str
    log: str  # ptxas's own output, verbatim
    res_usage: str = ""  # cuobjdump -res-usage output, verbatim (where constant banks came from)

    def kernel_resources(self) -> KernelResources:
        """The entry this report is about."""
        for f in self.report.functions:
            if f.name == self.kernel and f.is_entry:
                return f
        raise KeyError(f"ptxas reported no entry {self.kernel!r}: {[f.name for f in self.report.functions]}")


# ================================================================ sass (cubin disassembly)
# Written by helper B (services/toolrunner/tools/sass/spec.py); keep this section when editing the ptxas_info part.

Disassembler = Literal["nvdisasm", "cuobjdump"]


class SassInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Either a cubin file (`cubin_path`) or a task kernel, compiled (cached) by the compile tool."""

    cubin_path: str = ""  # a cubin for one GPU
    task_path: str = ""  # or: a task file; its kernel is compiled with `config` for `target` and `shape`
    kernel: str = ""  # one kernel in the binary; "" = every kernel (task mode: the compiled kernel)
    config: dict[str, Scalar] = {}  # task mode: overrides of the task's CONFIG
    target: str = "cuda:90"  # task mode
    shape: str = "full"  # task mode: the shape whose launch arguments decide Triton's specialization
    # nvdisasm -c -gi gives source lines per instruction; cuobjdump -sass gives none.
    disassembler: Disassembler = "nvdisasm"
    include_instructions: bool = True  # False = histogram and summary only (a much smaller record)
    # True = also return the disassembler's text verbatim (SassOutput.text): the decomposer reads it for
    # per-source-line correlation (services/decomposer/sass.py), so the parsing stays in one place.
    include_text: bool = False


class SassInstruction(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    addr: int  # byte offset in the kernel's code
    opcode: str  # with modifiers, e.g. "LDG.E.128", "HGMMA.64x128x16.F32"
    operands: list[str]
    predicate: str | None = None  # "@P0", "@!P1", "@UP0", ...
    file: str | None = None  # source file of the instruction (nvdisasm line info)
    line: int | None = None


class SassSummary(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Counts of the instruction classes the bottleneck patterns look at (static, not executed counts)."""

    instructions: int
    global_loads: dict[str, int]  # access width in bits -> LDG count, e.g. {"128": 4, "32": 2}
    global_stores: dict[str, int]  # width -> STG count
    async_copies: dict[str, int]  # width -> LDGSTS (cp.async) count
    tma_ops: int  # UTMALDG / UTMASTG / UBLKCP (bulk tensor copies)
    shared_loads: int  # LDS + LDSM
    shared_stores: int  # STS
    local_loads: int  # LDL: register spills or local arrays
    local_stores: int  # STL
    hgmma: int  # Hopper warpgroup MMA (wgmma)
    hmma: int  # warp-level MMA (mma.sync)
    other_mma: int  # IMMA, DMMA, IGMMA, QGMMA, BGMMA
    barriers: int  # BAR.*
    global_atomics: int  # ATOMG, ATOM, RED (global reductions)
    shared_atomics: int  # ATOMS
    shuffles: int  # SHFL
    branches: int  # BRA, BRX, JMP
    predicated: int  # instructions under a predicate other than PT


class SassKernel(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str
    histogram: dict[str, int]  # full opcode (with modifiers) -> count
    summary: SassSummary
    instructions: list[SassInstruction] = []
    has_line_info: bool = False


class SassOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    arch: str  # "sm_90a"
    disassembler: str  # the tool and its version line
    kernels: list[SassKernel]
    cubin_sha256: str = ""  # of the bytes disassembled (the compile tool's artifact key in task mode)
    compile_cache_key: str = ""  # task mode: the compile this cubin came from
    text: str = ""  # include_text: the disassembly as printed (every kernel in the binary)
