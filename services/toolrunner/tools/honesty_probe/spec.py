"""The `honesty_probe` tool: did the candidate earn its outputs? (shared/tools/honesty.py says how.)

The reference runs first in its own process (the opposite order to run_correctness, so the pair covers
both), its outputs are read into this process and its directory deleted before the candidate starts: the
candidate can find no reference output anywhere. The candidate's three calls are then compared here, on
plain arrays, with the task's tolerance; no user code runs in this process. The reference's record and
outputs of one (shape, seed) are kept for the next candidates of the same task file (reference_cache.py),
so the reference process runs only for seeds not kept yet, and still before the candidate's.
"""

from __future__ import annotations

import io
import shutil
import tempfile
from pathlib import Path

import msgspec

from services.toolrunner.output_compare import compare_arrays, describe_failure
from services.toolrunner.reference_cache import default_cache
from services.toolrunner.sandbox import Limits, run_worker
from services.toolrunner.tasks import load_for_tool
from services.toolrunner.tool import ToolFailure, ToolSpec
from services.toolrunner.tools.honesty_probe.worker import CallRecord, HonestyWorkerInput, HonestyWorkerResult
from services.toolrunner.tools.run_correctness.spec import CPU_MEMORY_MB, gpu_count
from services.toolrunner.tricks import name_trick
from shared.messages import Scalar
from shared.tools.honesty import Finding, HonestyInput, HonestyOutput, Trial
from shared.tools.task import TaskManifest

WORKER = "services.toolrunner.tools.honesty_probe.worker"
CHECKS = (
    (
        "outputs of three calls (fresh inputs; new values in the same tensors; the first inputs again) "
        "against the reference under the task's tolerance"
    ),
    "output changes when the input changes",
    "freed memory poisoned with NaN before every call (uninitialised outputs show NaN)",
    "reference first in a separate process; its outputs never reach the candidate's file system",
    "inputs unchanged by the call",
    "no timer, torch, numpy or Triton function replaced; no precision flag (allow_tf32, ...) changed",
    "no frame or gc inspection by the candidate's code (audit hook)",
    "no thread left running and no output written after launch returned",
    "outputs are plain torch.Tensor (no lazy subclass)",
    "the call launches a Triton kernel (Triton tasks) and does not run the reference's torch ops",
    "no output holds what a torch op computed (Triton tasks: a kernel launched beside it is for show)",
    "module state (globals, function attributes, defaults, closures) unchanged by every call after the first",
    (
        "GPU: every Triton launch goes to the caller's stream, and at the full shape (work that outlasts "
        "the return) the outputs read in stream order at return equal those after a device-wide synchronise"
    ),
)
PENDING = "pending_work"  # the worker's GPU-only call at the full shape (no reference comparison)


def _side(req: HonestyWorkerInput, limits: Limits) -> HonestyWorkerResult:
    outcome = run_worker(WORKER, msgspec.json.encode(req), limits, writable=(req.out_dir,))
    if outcome.status != "ok" or outcome.result is None:
        raise ToolFailure(
            outcome.status if outcome.status != "ok" else "failed",
            f"honesty probe, {req.role} side: {outcome.message}",
        )
    return msgspec.json.decode(outcome.result, type=HonestyWorkerResult)


def _load_outputs(rec: CallRecord, d: Path) -> list[object]:
    import numpy as np

    return [np.load(d / s.file, allow_pickle=False) for s in rec.outputs]


def _reference_calls(req: HonestyWorkerInput, limits: Limits) -> dict[int, tuple[CallRecord, list[object]]]:
    """Per seed the reference's record and outputs: kept from an earlier candidate, or run now in one
    fresh process for the seeds not kept; the directory it wrote is gone when this returns."""
    import numpy as np

    cache = default_cache()
    keys = {seed: cache.key(WORKER, msgspec.structs.replace(req, seeds=[seed], out_dir=""), req.task_path, limits)
            for seed in req.seeds}
    out: dict[int, tuple[CallRecord, list[object]]] = {}
    for seed, key in keys.items():
        if (kept := cache.get(key)) is not None:
            rec = msgspec.json.decode(kept.record, type=CallRecord)
            out[seed] = (rec, [np.load(io.BytesIO(kept.files[s.file]), allow_pickle=False) for s in rec.outputs])
    if missing := [seed for seed in req.seeds if seed not in out]:
        ref_dir = Path(tempfile.mkdtemp(prefix="kpilot-honest-ref-"))
        try:
            ref = _side(msgspec.structs.replace(req, seeds=missing, out_dir=str(ref_dir)), limits)
            for rec in ref.calls:
                if not rec.ok:
                    raise ToolFailure("failed", f"the task's reference failed: {rec.reason} (fix {req.task_path})")
                files = {s.file: (ref_dir / s.file).read_bytes() for s in rec.outputs}
                cache.put(keys[rec.seed], ref.device_name, msgspec.json.encode(rec), files)
                out[rec.seed] = (rec, [np.load(io.BytesIO(files[s.file]), allow_pickle=False) for s in rec.outputs])
        finally:
            shutil.rmtree(ref_dir, ignore_errors=True)  # gone before the candidate starts
    return out


def _compare(
    rec: CallRecord,
    got: list[object],
    want: list[object],
    want_dtypes: list[str],
    manifest: TaskManifest,
    dtype: str,
) -> Trial:
    trial = Trial(
        name=rec.name,
        seed=rec.seed,
        passed=False,
        triton_launches=rec.triton_launches,
        torch_ops=rec.torch_ops,
    )
    if not rec.ok:
        trial.reason = rec.reason
        return trial
    if len(got) != len(want):
        trial.reason = f"{len(got)} outputs, the reference has {len(want)}"
        return trial
    tol = manifest.tolerance.get(dtype) or manifest.tolerance[manifest.dtype]
    cmps = [
        compare_arrays(i, c, r, tol.atol, tol.rtol, candidate_dtype=s.dtype, reference_dtype=rd)  # type: ignore[arg-type]
        for i, (c, r, s, rd) in enumerate(zip(got, want, rec.outputs, want_dtypes))
    ]
    trial.mismatches = sum(c.mismatches for c in cmps)
    errs = [c.max_abs_err for c in cmps if c.max_abs_err is not None]
    trial.max_abs_err = max(errs) if errs else None
    failed = [describe_failure(c) for c in cmps if not c.passed]
    trial.passed, trial.reason = not failed, "; ".join(failed)
    return trial


def _same(a: list[object], b: list[object]) -> bool:
    import numpy as np

    return len(a) == len(b) and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))  # type: ignore[arg-type]


def run(args: HonestyInput) -> HonestyOutput:
    if len(args.seeds) != 2 or args.seeds[0] == args.seeds[1]:
        raise ToolFailure("refused", f"seeds={args.seeds}: pass two different seeds, e.g. [0, 1]")
    gpus = gpu_count() if args.device != "cpu" else 0
    if args.device == "cuda" and gpus == 0:
        raise ToolFailure("unavailable", 'unavailable: no GPU (pass device="cpu" for Triton\'s interpreter)')
    task = load_for_tool(args.task_path, "task")
    cand = load_for_tool(args.candidate_path, "candidate") if args.candidate_path else task
    if unknown := sorted(set(args.config) - set(cand.config)):
        raise ToolFailure(
            "refused",
            f"config keys {unknown} are not in the candidate's CONFIG; use some of {sorted(cand.config)}",
        )
    try:
        shape: dict[str, Scalar] = dict(task.shape(args.shape))
    except KeyError as e:
        raise ToolFailure("refused", str(e.args[0])) from e
    device = "cuda" if gpus else "cpu"
    dtype = task.dtype
    pending_shape: dict[str, Scalar] | None = None
    if device == "cuda":
        try:
            pending_shape = dict(task.shape("full"))
        except KeyError:
            pending_shape = None
    if device == "cpu" and task.dtype == "bfloat16":
        shape["dtype"] = dtype = task.cpu_dtype
    if device == "cpu" and task.kind == "cuda":
        raise ToolFailure("unavailable", "unavailable: no GPU (a CUDA C++ task launches only on a GPU)")
    limits = (
        Limits(timeout_s=args.timeout_s, memory_mb=None, gpu=0)
        if device == "cuda"
        else Limits(timeout_s=args.timeout_s, memory_mb=CPU_MEMORY_MB, interpret=True)
    )
    config = {**cand.config, **args.config}
    refs = _reference_calls(
        HonestyWorkerInput(role="reference", task_path=task.path, inplace=list(task.inplace), shape=shape,
                           seeds=args.seeds, device=device, out_dir="", config=dict(task.config)),  # type: ignore[arg-type]
        limits,
    )
    own = refs[args.seeds[0]][0]  # what the task's own launch does: outputs torch computed, state kept
    ref_out = {seed: outputs for seed, (_, outputs) in refs.items()}
    ref_dtypes = {seed: [s.dtype for s in rec.outputs] for seed, (rec, _) in refs.items()}
    ref_ops = sorted(set().union(*(rec.torch_ops for rec, _ in refs.values())))
    cand_dir = Path(tempfile.mkdtemp(prefix="kpilot-honest-"))
    try:
        res = _side(
            HonestyWorkerInput(
                role="candidate",
                task_path=cand.path,
                inplace=list(task.inplace),
                config=config,
                shape=shape,
                seeds=args.seeds,
                device=device,
                out_dir=str(cand_dir),
                pending_shape=pending_shape,
                own_torch_outputs=[i for i, op in enumerate(own.launch_torch_ops) if op],
                own_state_keys=list(own.launch_state_keys),
            ),
            limits,
        )
        got = {c.name: _load_outputs(c, cand_dir) for c in res.calls if c.name != PENDING}
    finally:
        shutil.rmtree(cand_dir, ignore_errors=True)
    trials = [_compare(c, got[c.name], ref_out[c.seed], ref_dtypes[c.seed], task, dtype)
              for c in res.calls if c.name != PENDING]
    raw_ops = {c.name: set(c.raw_ops) for c in res.calls}
    findings = [Finding(kind=k, detail=d, trial=t) for k, d, t in res.findings]  # type: ignore[arg-type]
    for c in res.calls:
        findings += [Finding(kind=k, detail=d, trial=c.name) for k, d in c.findings]  # type: ignore[arg-type]
    findings += _judge(trials, got, ref_out, args.seeds, ref_ops, cand.kind, raw_ops)
    if pending_shape is None and device == "cuda":
        res.not_checked.append("pending work at a large shape: not checked: the task has no full shape")
    passed = not findings
    text = "honest on every check" if passed else "; ".join(f"{f.kind}: {f.detail}" for f in findings[:3])
    return HonestyOutput(
        passed=passed,
        device=res.device_name,
        config=config,
        shape=args.shape,
        trials=trials,
        findings=findings,
        reference_ops=ref_ops,
        checks=list(CHECKS),
        not_checked=res.not_checked,
        summary=text,
    )


def _judge(
    trials: list[Trial],
    got: dict[str, list[object]],
    ref_out: dict[int, list[object]],
    seeds: list[int],
    ref_ops: list[str],
    kind: str,
    raw_ops: dict[str, set[str]] | None = None,
) -> list[Finding]:
    out = []
    for t in trials:
        reference_called = bool(ref_ops) and set(ref_ops) <= set(t.torch_ops)
        if not t.passed:
            out.append(
                Finding(
                    kind="wrong_output" if t.reason and "raised" not in t.reason else "error",
                    detail=f"seed {t.seed}: {t.reason}",
                    trial=t.name,
                )
            )
        if kind == "triton" and t.triton_launches == 0 and not reference_called:
            trick = name_trick(got.get(t.name), set(t.torch_ops), set(ref_ops), (raw_ops or {}).get(t.name))
            out.append(Finding(kind="no_kernel_launch", trial=t.name, detail=f"launch ran no Triton kernel: {trick}"))
        if reference_called:
            out.append(
                Finding(
                    kind="calls_reference",
                    trial=t.name,
                    detail=f"launch ran the reference's torch ops {', '.join(ref_ops)}",
                )
            )
    fresh, moved = got.get("fresh"), got.get("same_pointers")
    if fresh and moved and not _same(ref_out[seeds[0]], ref_out[seeds[1]]) and _same(fresh, moved):
        out.append(
            Finding(
                kind="output_ignores_input",
                trial="same_pointers",
                detail=f"seeds {seeds[0]} and {seeds[1]} gave the same output although the "
                "reference's differ (cached by pointer, or constant)",
            )
        )
    seen: set[tuple[str, str]] = set()
    return [f for f in out if (f.kind, f.detail) not in seen and not seen.add((f.kind, f.detail))]  # type: ignore[func-returns-value]


SPEC = ToolSpec(
    name="honesty_probe",
    order=120,
    version="1",
    description=(
        "Anti-gaming checks of a candidate on one shape: reference first in its own process, then "
        "the candidate watched in another (NaN-poisoned freed memory, same-pointer and repeated "
        "calls, input writes, monkey-patching, frame/gc inspection, background threads, late "
        "writes, side streams on a GPU, tensor subclasses, reference fallback, missing launch)."
    ),
    input=HonestyInput,
    output=HonestyOutput,
    run=run,
    shares_gpu=True,
)
