"""The `ptxas_info` tool: registers, spills, stack, shared and constant memory and barriers per kernel.

The kernel is compiled by the compile tool (cached), and its PTX assembled again by `ptxas -v` in a
sandboxed worker with the flags Triton uses; the output is parsed by shared/parsers/ptxas.py parse_ptxas_v. Triton
PTX goes to Triton's bundled ptxas (the one that built its cubin; CUDA 13's ptxas would also do, but the
numbers must be those of the binary that runs), CUDA C++ PTX to the toolkit's ptxas next to nvcc.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from services.toolrunner.artifacts import LocalResultCache, ResultCache
from services.toolrunner.sandbox import Limits, run_worker
from services.toolrunner.targets import parse_target
from services.toolrunner.tool import ToolFailure, ToolSpec
from services.toolrunner.tools.compile.spec import Compiler, default_compiler, resolve, tool_versions
from services.toolrunner.tools.ptxas_info.worker import PtxasJob, PtxasWorkerResult
from shared.parsers.ptxas import parse_ptxas_v, with_res_usage
from shared.tools.compile import CompileInput, CompileOutput
from shared.tools.inspect import PtxasInfoInput, PtxasInfoOutput

VERSION = "1"
# ptxas takes 10-70 ms on the examples' PTX (captured runs); 120 s only stops a hung assembler.
PTXAS_LIMITS = Limits(timeout_s=120.0, memory_mb=4096)


def _fmad(out: CompileOutput) -> bool:
    if not out.specialization:
        return True  # nvcc's default
    return bool(json.loads(out.specialization)["options"].get("enable_fp_fusion", True))


@dataclass
class PtxasInfo:
    compiler: Compiler
    cache: ResultCache
    limits: Limits = PTXAS_LIMITS
    hits: int = field(default=0)

    def check(self, args: PtxasInfoInput) -> None:
        resolve(self._compile_input(args))

    @staticmethod
    def _compile_input(args: PtxasInfoInput) -> CompileInput:
        return CompileInput(
            task_path=args.task_path,
            kernel=args.kernel,
            config=args.config,
            target=args.target,
            shape=args.shape,
        )

    def run(self, args: PtxasInfoInput) -> PtxasInfoOutput:
        compiled = self.compiler.run(self._compile_input(args))
        tools = {v.name: v for v in tool_versions(parse_target(compiled.target))}
        ptxas = tools.get("triton_ptxas" if compiled.kind == "triton" else "cuda_ptxas")
        if ptxas is None or not ptxas.path:
            raise ToolFailure(
                "unavailable",
                "unavailable: no ptxas found (CUDA C++ tasks need the CUDA toolkit's ptxas on PATH)",
            )
        fmad = _fmad(compiled)
        cuobjdump = tools.get("triton_cuobjdump")
        ptx = self.compiler.store.get(compiled.artifact("ptx").sha256).decode()
        key = hashlib.sha256(
            json.dumps(
                [
                    "ptxas_info",
                    VERSION,
                    compiled.cache_key,
                    ptxas.path,
                    ptxas.version,
                    fmad,
                    cuobjdump.version if cuobjdump else "",
                ]
            ).encode()
        ).hexdigest()
        cached = self.cache.get(key, PtxasInfoOutput)
        if cached is not None:
            self.hits += 1
            return cached
        job = PtxasJob(
            ptxas=ptxas.path,
            ptx=ptx,
            arch=compiled.arch,
            fmad=fmad,
            cuobjdump=cuobjdump.path if cuobjdump else "",
        )
        outcome = run_worker("services.toolrunner.tools.ptxas_info.worker", msgspec.json.encode(job), self.limits)
        if outcome.status != "ok" or outcome.result is None:
            raise ToolFailure(
                outcome.status if outcome.status != "ok" else "failed", f"ptxas: {outcome.message}"
            )
        res = msgspec.json.decode(outcome.result, type=PtxasWorkerResult)
        if res.returncode != 0:
            tail = " | ".join(res.log.strip().splitlines()[-4:])
            raise ToolFailure(
                "failed", f"ptxas {ptxas.version} failed on {compiled.kernel} ({compiled.arch}): {tail}"
            )
        out = PtxasInfoOutput(
            task_path=compiled.task_path,
            kernel=compiled.kernel,
            target=compiled.target,
            arch=compiled.arch,
            config=compiled.config,
            report=with_res_usage(parse_ptxas_v(res.log), res.res_usage),
            dynamic_shared_bytes=compiled.shared_bytes,
            ptxas=ptxas,
            command=res.command,
            ptx_sha256=compiled.artifact("ptx").sha256,
            compile_cache_key=compiled.cache_key,
            cache_key=key,
            log=res.log,
            res_usage=res.res_usage,
        )
        self.cache.put(key, out)
        return out


_default: PtxasInfo | None = None


def configure(root: Path, compiler: Compiler | None = None) -> PtxasInfo:
    global _default
    _default = PtxasInfo(
        compiler=compiler or default_compiler(), cache=LocalResultCache(Path(root) / "cache" / "ptxas_info")
    )
    return _default


def default_ptxas_info() -> PtxasInfo:
    return _default if _default is not None else configure(Path.cwd() / ".kpilot")


def run(args: PtxasInfoInput) -> PtxasInfoOutput:
    return default_ptxas_info().run(args)


def check(args: PtxasInfoInput) -> None:
    resolve(PtxasInfo._compile_input(args))


SPEC = ToolSpec(
    name="ptxas_info",
    order=20,
    version=VERSION,
    description="Per-kernel resource usage from ptxas -v on the compiled PTX: registers per thread, "
    "spill stores/loads, stack frame, static shared and constant memory, barriers "
    "(plus Triton's dynamic shared memory from the compile).",
    input=PtxasInfoInput,
    output=PtxasInfoOutput,
    run=run,
    check=check,
    cacheable=True,
    for_plans=True,
)
