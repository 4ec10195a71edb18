"""The sass tool: a cubin's SASS per kernel, with source lines and an opcode histogram.

The cubin is a file (`cubin_path`) or a task kernel compiled by the compile tool (`task_path`, cached; the
cubin comes from its artifact store). `check` reads the cubin's ELF section names (pure) to refuse a kernel
the binary lacks; `run` has the bundled nvdisasm (or cuobjdump) disassemble it in a sandboxed worker and
parses the text with shared/parsers/sass.py.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import msgspec

from services.toolrunner.sandbox import Limits, run_worker
from services.toolrunner.tool import ToolFailure, ToolSpec
from services.toolrunner.tools.sass.cubin_elf import CubinError, kernel_names
from services.toolrunner.tools.sass.worker import DisasmRequest, DisasmResult
from shared.parsers.sass import arch_of, kernels_from_text
from shared.tools.inspect import SassInput, SassOutput

# nvdisasm takes ~0.1 s on a 70 KB cubin; 60 s only guards against a hang.
LIMITS = Limits(timeout_s=60.0, memory_mb=4096)


def _mode(req: SassInput) -> None:
    if bool(req.cubin_path) == bool(req.task_path):
        raise ToolFailure(
            "refused",
            "give exactly one of cubin_path (a .cubin file) or task_path (a task whose "
            "kernel the compile tool builds)",
        )


def _refuse_missing_kernel(data: bytes, kernel: str, what: str) -> None:
    try:
        names = kernel_names(data)
    except CubinError as e:
        raise ToolFailure("refused", f"{what}: {e}") from None
    if kernel and kernel not in names:
        raise ToolFailure(
            "refused",
            f"kernel {kernel!r} is not in {what}; the binary has: {', '.join(names) or 'no kernels'}",
            [f"kernel: {kernel}"],
        )


def check(req: SassInput) -> None:
    _mode(req)
    if req.task_path:
        return  # the compile tool checks the task, kernel, config and shape when it runs
    path = Path(req.cubin_path)
    if not path.is_file():
        raise ToolFailure(
            "refused", f"no such cubin: {path} (pass a .cubin file, or task_path to compile one)"
        )
    _refuse_missing_kernel(path.read_bytes(), req.kernel, path.name)


def _compiled_cubin(req: SassInput) -> tuple[bytes, str, str]:
    """(cubin bytes, kernel, compile cache key) from the compile tool (import deferred: it is a peer tool)."""
    from services.toolrunner.tools.compile.spec import default_compiler
    from shared.tools.compile import CompileInput

    compiler = default_compiler()
    out = compiler.run(
        CompileInput(
            task_path=req.task_path, kernel=req.kernel, config=req.config, target=req.target, shape=req.shape
        )
    )
    return compiler.store.get(out.artifact("cubin").sha256), out.kernel, out.cache_key


def _disassemble(cubin: Path, disassembler: str) -> DisasmResult:
    outcome = run_worker(
        "services.toolrunner.tools.sass.worker",
        msgspec.json.encode(DisasmRequest(cubin_path=str(cubin), disassembler=disassembler)),
        LIMITS,
    )
    if outcome.status != "ok" or outcome.result is None:
        raise ToolFailure(outcome.status if outcome.status != "ok" else "failed", outcome.message)
    res = msgspec.json.decode(outcome.result, type=DisasmResult)
    if not res.ok:
        raise ToolFailure("failed", res.message)
    return res


def run(req: SassInput) -> SassOutput:
    check(req)
    kernel, cache_key = req.kernel, ""
    if req.task_path:
        data, kernel, cache_key = _compiled_cubin(req)
        with tempfile.TemporaryDirectory(prefix="kpilot-sass-") as d:
            cubin = Path(d) / f"{kernel}.cubin"
            cubin.write_bytes(data)
            res = _disassemble(cubin, req.disassembler)
    else:
        data = Path(req.cubin_path).read_bytes()
        res = _disassemble(Path(req.cubin_path).resolve(), req.disassembler)
    kernels = kernels_from_text(res.text, include_instructions=req.include_instructions)
    if kernel:
        kernels = [k for k in kernels if k.name == kernel]
    return SassOutput(
        arch=arch_of(res.text),
        disassembler=res.version,
        kernels=kernels,
        cubin_sha256=hashlib.sha256(data).hexdigest(),
        compile_cache_key=cache_key,
        text=res.text if req.include_text else "",
    )


SPEC = ToolSpec(
    name="sass",
    order=30,
    version="1",
    description="Disassemble a cubin or a task's compiled kernel (nvdisasm with source lines, or cuobjdump): "
    "per kernel the instructions {addr, opcode, operands, predicate, file, line}, an opcode "
    "histogram and a summary of global load/store widths (LDG.E.128 ...), cp.async/TMA, shared "
    "and local (spill) traffic, HGMMA/HMMA, barriers, atomics, shuffles and branches; include_text "
    "adds the disassembly text itself.",
    input=SassInput,
    output=SassOutput,
    run=run,
    check=check,
    cacheable=True,
    for_plans=True,
)
