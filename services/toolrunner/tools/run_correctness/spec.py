"""The `run_correctness` tool: a candidate against the task's reference on named shapes and seeds.

Order matters for honesty: the candidate runs first, in its own sandboxed process, and its outputs are
hashed the moment it exits; only then does the reference run, in another process, into a directory
created afterwards. So the candidate never sees the reference output and cannot rewrite its own later.
Both sides hash their inputs, which proves they compared like with like. The comparison itself
(output_compare.py) runs here, on plain .npy arrays: no user code runs in this process.

The reference side of a case does not depend on the candidate: its record and outputs are kept by
reference_cache.py, keyed on the task file's sha256, the case and everything else that can change them,
and the next candidate of the same task runs only its own process (the reference process runs only for
cases not kept yet, still after the candidate's).

On CPU the kernels run in Triton's interpreter; a bfloat16 task runs its CPU twin (`CPU_DTYPE`, passed
as `shape["dtype"]`), or the case says it was not checked. On a GPU everything runs for real.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tempfile
from pathlib import Path

import msgspec

from services.toolrunner.output_compare import compare_arrays, describe_failure
from services.toolrunner.reference_cache import default_cache
from services.toolrunner.sandbox import Limits, SandboxOutcome, run_worker
from services.toolrunner.tasks import load_for_tool
from services.toolrunner.tool import ToolFailure, ToolSpec
from services.toolrunner.tools.run_correctness.worker import (
    BF16_ON_CPU,
    CaseOutput,
    CaseSpec,
    CorrectnessWorkerInput,
    CorrectnessWorkerResult,
)
from shared.messages import Scalar
from shared.tools.run import CaseResult, OutputComparison, RunCorrectnessInput, RunCorrectnessOutput
from shared.tools.task import TaskManifest, Tolerance

WORKER = "services.toolrunner.tools.run_correctness.worker"
# CPU side: the interpreter keeps a host copy of every argument; 8 GiB of address space covers the
# examples' full shapes (3 x 256 MiB for vector_add) with room for torch's ~1 GB of mappings.
CPU_MEMORY_MB = 8192


def gpu_count() -> int:
    """CUDA devices NVML sees (0 without a driver). Called at run time, never at import."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no library, no driver, no device: all mean no GPU
        return 0


def resolve_cases(manifest: TaskManifest, names: list[str], seeds: list[int], cpu: bool) -> list[CaseSpec]:
    """Named shapes x seeds, with the CPU twin dtype put into the shape of a bfloat16 task on CPU."""
    if not names:
        raise ToolFailure("refused", 'no shapes: pass e.g. shapes=["micro", "edge"]')
    if not seeds:
        raise ToolFailure("refused", "no seeds: pass e.g. seeds=[0, 1, 2]")
    expanded: list[str] = []
    for name in names:
        expanded += ([f"edge:{i}" for i in range(len(manifest.shapes.edge))] if name == "edge" else [name])
    cases = []
    for name in dict.fromkeys(expanded):
        try:
            shape: dict[str, Scalar] = dict(manifest.shape(name))
        except KeyError as e:
            raise ToolFailure("refused", f"{e.args[0]} (or \"edge\" for all of them)") from e
        if cpu and manifest.dtype == "bfloat16":
            shape["dtype"] = manifest.cpu_dtype
        cases += [CaseSpec(shape_name=name, shape=shape, seed=s) for s in seeds]
    return cases


def _run_side(req: CorrectnessWorkerInput, limits: Limits) -> tuple[SandboxOutcome, CorrectnessWorkerResult | None]:
    outcome = run_worker(WORKER, msgspec.json.encode(req), limits, writable=(req.out_dir,))
    result = None
    if outcome.status == "ok" and outcome.result is not None:
        result = msgspec.json.decode(outcome.result, type=CorrectnessWorkerResult)
    return outcome, result


def _hash_files(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def _reference_cases(task: TaskManifest, cases: list[CaseSpec], device: str, limits: Limits
                     ) -> tuple[list[tuple[CaseOutput, dict[str, bytes]]], str, int]:
    """Per case the reference's record and output bytes: kept from an earlier candidate, or run now in
    one fresh process for the cases not kept. Also the device's name and how many cases were kept."""
    cache = default_cache()
    keys = [cache.key(WORKER, CorrectnessWorkerInput(
        role="reference", task_path=task.path, cases=[spec], device=device, out_dir="",  # type: ignore[arg-type]
        inplace=list(task.inplace)), task.path, limits) for spec in cases]
    found = [cache.get(k) for k in keys]
    refs: list[tuple[CaseOutput, dict[str, bytes]] | None] = [
        None if f is None else (msgspec.json.decode(f.record, type=CaseOutput), f.files) for f in found]
    device_name = next((f.device_name for f in found if f is not None), "")
    missing = [i for i, r in enumerate(refs) if r is None]
    if missing:
        ref_dir = Path(tempfile.mkdtemp(prefix="kpilot-corr-ref-"))  # made after the candidate ended
        try:
            ref_out, ref_res = _run_side(CorrectnessWorkerInput(
                role="reference", task_path=task.path, cases=[cases[i] for i in missing],
                device=device, out_dir=str(ref_dir), inplace=list(task.inplace)), limits)  # type: ignore[arg-type]
            if ref_res is None:
                raise ToolFailure(ref_out.status, f"the task's reference {ref_out.status}: {ref_out.message} "
                                                  f"(fix reference() or make_inputs() in {task.path})")
            device_name = ref_res.device_name
            for i, case in zip(missing, ref_res.cases, strict=True):
                files = {o.file: (ref_dir / o.file).read_bytes() for o in case.outputs}
                refs[i] = (case, files)
                if case.status != "error":  # a case whose reference raised runs again next time
                    cache.put(keys[i], device_name, msgspec.json.encode(case), files)
        finally:
            shutil.rmtree(ref_dir, ignore_errors=True)
    return [r for r in refs if r is not None], device_name, len(cases) - len(missing)


def _tolerance(manifest: TaskManifest, dtype: str) -> Tolerance:
    return manifest.tolerance.get(dtype) or manifest.tolerance[manifest.dtype]


def _compare_case(spec: CaseSpec, cand: CaseOutput, ref: CaseOutput, manifest: TaskManifest,
                  cand_dir: Path, ref_files: dict[str, bytes], cand_hashes: dict[str, str]) -> CaseResult:
    base = {"shape_name": spec.shape_name, "shape": spec.shape, "seed": spec.seed,
                "dtype": ref.input_dtype or cand.input_dtype, "candidate_s": cand.seconds,
                "candidate_modified_inputs": cand.inputs_modified}
    if ref.status == "not_checked" or cand.status == "not_checked":
        return CaseResult(**base, status="not_checked", reason=ref.reason or cand.reason)
    if ref.status != "ok":
        return CaseResult(**base, status="error", reason=f"reference: {ref.reason}")
    if cand.status != "ok":
        return CaseResult(**base, status="fail", reason=f"candidate: {cand.reason}")
    if cand.input_digest != ref.input_digest:
        return CaseResult(**base, status="error", reason=(
            "candidate and reference saw different inputs: make_inputs(shape, seed) must be deterministic "
            "(seed torch from `seed`), and a candidate file's make_inputs must match the task's"))
    if len(cand.outputs) != len(ref.outputs):
        return CaseResult(**base, status="fail", reason=(
            f"candidate returned {len(cand.outputs)} outputs, reference {len(ref.outputs)}"))
    import numpy as np

    tol = _tolerance(manifest, base["dtype"])  # type: ignore[arg-type]
    comparisons: list[OutputComparison] = []
    for i, (c, r) in enumerate(zip(cand.outputs, ref.outputs)):
        path = cand_dir / c.file
        on_disk = hashlib.sha256(path.read_bytes()).hexdigest()
        if on_disk != c.sha256:
            return CaseResult(**base, status="fail", reason=(
                f"candidate output {i} was rewritten after the worker saved it (by code outside the call: a "
                f"thread, an exit hook or a finaliser of the candidate)"))
        if on_disk != cand_hashes.get(c.file):
            return CaseResult(**base, status="fail", reason=(
                f"candidate output {i} changed on disk after the candidate's process ended"))
        comparisons.append(compare_arrays(i, np.load(path, allow_pickle=False),
                                          np.load(io.BytesIO(ref_files[r.file]), allow_pickle=False),
                                          tol.atol, tol.rtol,
                                          candidate_dtype=c.dtype, reference_dtype=r.dtype))
    failed = [describe_failure(x) for x in comparisons if not x.passed]
    return CaseResult(**base, status="fail" if failed else "pass", outputs=comparisons,
                      reason="; ".join(failed))


def _summary(cases: list[CaseResult], candidate_message: str) -> str:
    n_pass = sum(c.status == "pass" for c in cases)
    text = f"{n_pass}/{len(cases)} cases pass"
    if unchecked := sum(c.status == "not_checked" for c in cases):
        text += f", {unchecked} not checked"
    first = next((c for c in cases if c.status in ("fail", "error")), None)
    if candidate_message:
        text += f"; candidate {candidate_message}"
    elif first is not None:
        text += f"; {first.shape_name} seed {first.seed}: {first.reason}"
    return text


def run(args: RunCorrectnessInput) -> RunCorrectnessOutput:
    gpus = gpu_count() if args.device != "cpu" else 0
    if args.device == "cuda" and gpus == 0:
        raise ToolFailure("unavailable", "unavailable: no GPU (pass device=\"cpu\" for Triton's interpreter)")
    cuda = gpus > 0
    task = load_for_tool(args.task_path, "task")
    cand_manifest = load_for_tool(args.candidate_path, "candidate") if args.candidate_path else task
    if unknown := sorted(set(args.config) - set(cand_manifest.config)):
        raise ToolFailure("refused", f"config keys {unknown} are not in the candidate's CONFIG; use some of "
                                     f"{sorted(cand_manifest.config)}")
    config = {**cand_manifest.config, **args.config}
    cases = resolve_cases(task, args.shapes, args.seeds, cpu=not cuda)
    limits = (Limits(timeout_s=args.timeout_s, memory_mb=None, gpu=0) if cuda
              else Limits(timeout_s=args.timeout_s, memory_mb=CPU_MEMORY_MB, interpret=True))
    device = "cuda" if cuda else "cpu"
    notes = []
    if not cuda and task.dtype == "bfloat16":
        notes.append(f"bfloat16 task checked on its {task.cpu_dtype} twin on CPU (Triton's interpreter "
                     "cannot run bf16); the GPU checks bf16 itself")
    work = Path(tempfile.mkdtemp(prefix="kpilot-corr-"))
    try:
        cand_dir = work / "candidate"
        cand_dir.mkdir()
        cand_out, cand_res = _run_side(CorrectnessWorkerInput(
            role="candidate", task_path=cand_manifest.path, config=config, cases=cases, device=device,
            out_dir=str(cand_dir), inplace=list(task.inplace)), limits)
        # Before this run's reference output exists (kept ones lie in the runner's cache, in no sandbox).
        cand_hashes = _hash_files(cand_dir)
        refs, device_name, reused = _reference_cases(task, cases, device, limits)
        cand_message = "" if cand_res is not None else f"{cand_out.status}: {cand_out.message}"
        results = []
        for i, (spec, (ref_case, ref_files)) in enumerate(zip(cases, refs, strict=True)):
            cand_case = (cand_res.cases[i] if cand_res is not None else
                         CaseOutput(shape_name=spec.shape_name, seed=spec.seed, status="error",
                                    reason=f"process {cand_message}"))
            results.append(_compare_case(spec, cand_case, ref_case, task, cand_dir, ref_files, cand_hashes))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if reused:
        notes.append(f"reference outputs of {reused}/{len(cases)} cases reused from an earlier fresh process "
                     "of the same task file (sha256), shape and seed (reference_cache.py)")
    if any(c.reason == BF16_ON_CPU for c in results):
        notes.append("make_inputs ignored shape[\"dtype\"], so bf16 cases were not checked on CPU: build "
                     "tensors with getattr(torch, shape.get(\"dtype\", DTYPE))")
    if any(c.candidate_modified_inputs for c in results):
        notes.append(f"the candidate wrote into inputs other than the declared INPLACE {list(task.inplace)}"
                     if task.inplace else "the candidate wrote into its inputs")
    if task.inplace:
        notes.append(f"in-place outputs: inputs {list(task.inplace)} after the call are compared (INPLACE)")
    passed = bool(results) and all(c.status == "pass" for c in results)
    return RunCorrectnessOutput(passed=passed, device=device_name, config=config, cases=results,
                                candidate_status=cand_out.status, candidate_message=cand_message,
                                notes=notes, summary=_summary(results, cand_message))


SPEC = ToolSpec(
    name="run_correctness",
    order=50,
    version="1",
    description=("Run a candidate (the task under another config, or a candidate task file) and the task's "
                 "reference in separate sandboxed processes on named shapes and seeds; report per case max "
                 "abs/rel error, mismatches with their first indices, NaN/Inf counts and pass/fail under "
                 "the task's tolerance. CPU: Triton's interpreter; GPU: the real kernel."),
    input=RunCorrectnessInput,
    output=RunCorrectnessOutput,
    run=run,
    shares_gpu=True,
)
