"""The `compile` tool: a task's kernel + config + target -> TTIR, TTGIR, LLIR, PTX and cubin, no GPU needed.

Runs in the toolrunner process but executes nothing itself: the task is loaded and compiled by sandboxed
workers (worker_lib/load_task.py, tools/compile/worker.py). Artifacts go to a content-addressed store and the
whole output record to a cache keyed by everything that can change it (`cache_key`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from services.toolrunner.artifacts import ArtifactStore, LocalArtifactStore, LocalResultCache, ResultCache
from services.toolrunner.sandbox import Limits, run_worker
from services.toolrunner.targets import parse_target, sm_arch
from services.toolrunner.task_parts import LAUNCH_OPTIONS
from services.toolrunner.tasks import load_for_tool
from services.toolrunner.tool import ToolFailure, ToolSpec
from services.toolrunner.tools.compile.versions_worker import VersionsRequest, VersionsResult
from services.toolrunner.tools.compile.worker import CompileJob, CompileWorkerResult
from shared.messages import Scalar
from shared.tools.compile import TEXT_KINDS, Artifact, CompileInput, CompileOutput, ParamSpec, ToolVersion
from shared.tools.task import TaskManifest

VERSION = "1"
# Triton compiles of the examples take 0.3-3 s on a 2-core machine after ~3 s of imports; 300 s is for a
# large unrolled kernel, while a hang still ends.
COMPILE_LIMITS = Limits(timeout_s=300.0, memory_mb=8192)
VERSIONS_LIMITS = Limits(timeout_s=120.0, memory_mb=4096)
# Tool versions a compile's output depends on, by task kind.
_VERSION_DEPS = {
    "triton": ("triton", "torch", "triton_ptxas"),
    "kernelbench": ("triton", "torch", "triton_ptxas"),
    "cuda": ("cuda_nvcc",),
}


@dataclass(frozen=True)
class Resolved:
    """A compile request checked against its task: every name exists, every default filled in."""

    manifest: TaskManifest
    kernel: str
    config: dict[str, Scalar]
    capability: int
    shape_values: dict[str, int]


def resolve(args: CompileInput) -> Resolved:
    """Check a request against the task; ToolFailure("refused") naming the fix when it does not fit."""
    manifest = load_for_tool(args.task_path)
    problems = []
    names = manifest.kernel_names()
    kernel = args.kernel or manifest.primary
    if not names:
        problems.append(
            f"task {manifest.name} has no kernel to compile (a KernelBench file needs a ModelNew "
            "that launches a @triton.jit kernel)"
        )
    elif kernel not in names:
        problems.append(f"kernel {args.kernel!r} is not in task {manifest.name}; its kernels are {names}")
    # Triton's launch options (maxnreg, ...) may be set even where CONFIG leaves them at Triton's default.
    options = LAUNCH_OPTIONS if manifest.kind != "cuda" else ()
    if unknown := sorted(set(args.config) - set(manifest.config) - set(options)):
        problems.append(
            f"config keys {unknown} are not in the task's CONFIG; its keys are "
            f"{sorted(manifest.config)}" + (f" (or a launch option {list(options)})" if options else "")
        )
    try:
        capability = parse_target(args.target)
    except ValueError as e:
        problems.append(str(e))
        capability = 0
    try:
        shape_values = manifest.shape(args.shape)
    except KeyError as e:
        problems.append(str(e.args[0]))
        shape_values = {}
    if problems:
        raise ToolFailure("refused", "; ".join(problems), problems)
    return Resolved(
        manifest=manifest,
        kernel=kernel,
        config={**manifest.config, **args.config},
        capability=capability,
        shape_values=dict(shape_values),
    )


def cache_key(r: Resolved, target: str, versions: list[ToolVersion]) -> str:
    """sha256 over every input that can change the compile output: the task's bytes, kernel, config,
    target, the shape (it decides Triton's specialization) and the compiler versions."""
    deps = _VERSION_DEPS[r.manifest.kind]
    blob = {
        "tool": "compile",
        "version": VERSION,
        "task_sha256": r.manifest.sha256,
        "kind": r.manifest.kind,
        "kernel": r.kernel,
        "config": sorted(r.config.items()),
        "target": target,
        "shape": sorted(r.shape_values.items()),
        "tools": sorted((v.name, v.version) for v in versions if v.name in deps),
    }
    return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()


@functools.cache
def tool_versions(capability: int = 90) -> tuple[ToolVersion, ...]:
    """Versions of triton, torch and the NVIDIA tools, asked once per process (in a sandbox worker)."""
    out = run_worker(
        "services.toolrunner.tools.compile.versions_worker",
        msgspec.json.encode(VersionsRequest(capability=capability)),
        VERSIONS_LIMITS,
    )
    if out.status != "ok" or out.result is None:
        raise ToolFailure(out.status if out.status != "ok" else "failed", f"tool versions: {out.message}")
    return tuple(msgspec.json.decode(out.result, type=VersionsResult).tools)


@dataclass
class Compiler:
    store: ArtifactStore
    cache: ResultCache
    limits: Limits = COMPILE_LIMITS
    hits: int = field(default=0)  # cache hits, for tests and metrics

    def check(self, args: CompileInput) -> None:
        resolve(args)

    def run(self, args: CompileInput) -> CompileOutput:
        r = resolve(args)
        versions = list(tool_versions(r.capability))
        key = cache_key(r, args.target, versions)
        cached = self.cache.get(key, CompileOutput)
        if cached is not None and all(self.store.has(a.sha256) for a in cached.artifacts):
            self.hits += 1
            return self._with_text(cached) if args.include_text else cached
        out = self._compile(r, args, versions, key)
        self.cache.put(key, out)
        return self._with_text(out) if args.include_text else out

    def _compile(
        self, r: Resolved, args: CompileInput, versions: list[ToolVersion], key: str
    ) -> CompileOutput:
        kind = "cuda" if r.manifest.kind == "cuda" else "triton"
        job = CompileJob(
            task_path=r.manifest.path,
            kind=r.manifest.kind,
            kernel=r.kernel,
            config=r.config,
            capability=r.capability,
            arch=sm_arch(r.capability),
            shape_values=r.shape_values,
        )
        t0 = time.monotonic()
        outcome = run_worker("services.toolrunner.tools.compile.worker", msgspec.json.encode(job), self.limits)
        wall = time.monotonic() - t0
        if outcome.status != "ok" or outcome.result is None:
            raise ToolFailure(
                outcome.status if outcome.status != "ok" else "failed",
                f"compile {r.manifest.name}:{r.kernel}: {outcome.message}",
            )
        res = msgspec.json.decode(outcome.result, type=CompileWorkerResult)
        if res.error:
            raise ToolFailure(
                "failed", f"compile {r.manifest.name}:{r.kernel} for {args.target}: {res.error}"
            )
        arts = [
            Artifact(kind=a.kind, sha256=self.store.put(a.data), size=len(a.data))  # type: ignore[arg-type]
            for a in res.artifacts
        ]
        deps = _VERSION_DEPS[r.manifest.kind]
        return CompileOutput(
            task_path=r.manifest.path,
            task_sha256=r.manifest.sha256,
            kernel=r.kernel,
            kind=kind,
            target=args.target,
            arch=sm_arch(r.capability),
            config=r.config,
            shape=args.shape,
            shape_values=r.shape_values,
            artifacts=arts,
            kernel_names=res.kernel_names,
            params=[msgspec.convert(p, ParamSpec) for p in res.params],
            specialization=res.specialization,
            inputs_device=res.inputs_device,
            shared_bytes=res.shared_bytes,
            num_warps=res.num_warps,
            tool_versions=[v for v in versions if v.name in deps],
            compile_s=res.compile_s or wall,
            cache_key=key,
        )

    def _with_text(self, out: CompileOutput) -> CompileOutput:
        arts = [
            msgspec.structs.replace(a, text=self.store.get(a.sha256).decode()) if a.kind in TEXT_KINDS else a
            for a in out.artifacts
        ]
        return msgspec.structs.replace(out, artifacts=arts)

    def text(self, out: CompileOutput, kind: str) -> str:
        """One text artifact of a compile (e.g. "ptx", "ttgir"), read from the store."""
        return self.store.get(out.artifact(kind).sha256).decode()


_default: Compiler | None = None


def configure(root: Path) -> Compiler:
    """Keep artifacts and cached compiles under `root` (the service calls this at start-up)."""
    global _default
    root = Path(root)
    _default = Compiler(
        store=LocalArtifactStore(root / "artifacts"), cache=LocalResultCache(root / "cache" / "compile")
    )
    return _default


def default_compiler() -> Compiler:
    # Not at import (import is silent): the first call without configure() uses ./.kpilot, git-ignored.
    return _default if _default is not None else configure(Path.cwd() / ".kpilot")


def run(args: CompileInput) -> CompileOutput:
    return default_compiler().run(args)


def check(args: CompileInput) -> None:
    resolve(args)


SPEC = ToolSpec(
    name="compile",
    order=10,
    version=VERSION,
    description="Compile one kernel of a task (Triton or CUDA C++) for a CUDA target without a GPU: "
    "TTIR, TTGIR, LLIR, PTX and cubin (CUDA C++: PTX and cubin) as content-addressed "
    "artifacts, with Triton's argument specialization and the tool versions.",
    input=CompileInput,
    output=CompileOutput,
    run=run,
    check=check,
    cacheable=True,
    for_plans=True,
)
