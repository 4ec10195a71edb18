"""Worker: one side of the honesty probe (shared/tools/honesty.py). Role "reference" or "candidate".

Reference: for each seed, `make_inputs` then `reference(inputs)` under a torch dispatch recorder (the aten
ops it runs are what "the candidate recomputes the reference" means); outputs saved as .npy.

Candidate: the watchers go in before the candidate file is imported (an audit hook for frame and gc
inspection, a snapshot of the functions a cheat would patch, counters on Triton's launch entry points),
then three calls: "fresh" (seed A), "same_pointers" (seed B's values copied into A's tensors, so a cache
keyed by data_ptr returns A's answer) and "repeat" (seed A in new tensors, so a candidate that skips work
on repeated calls returns B's answer). Before each call the freed memory is poisoned: blocks the size of
every input and earlier output are filled with 0xFF bytes (NaN in every float format) and released, so
`torch.empty` that is never written shows NaN instead of a stale right answer.
"""

from __future__ import annotations

import hashlib
import sys
import sysconfig
import threading
import time
from pathlib import Path
from typing import Any, Literal

import msgspec

from services.toolrunner.tricks import op_recorder
from services.toolrunner.worker_lib.io import read_request, write_result
from services.toolrunner.worker_lib.tensors import call_outputs, declared_indices
from shared.messages import Scalar

Role = Literal["candidate", "reference"]
# Seconds to wait after a call returns before looking again at its outputs: a background thread or a
# side stream that writes late has had time to do so (the examples' micro calls take ~1 s interpreted
# and ~10 us on the GPU).
LATE_WRITE_WAIT_S = 0.3
SPY_EVENTS = (
    "sys._getframe",
    "sys._current_frames",
    "gc.get_objects",
    "gc.get_referrers",
    "gc.get_referents",
)
FRAME_ATTRS = ("tb_frame", "f_back", "f_locals", "f_globals", "gi_frame", "cr_frame", "ag_frame")


class HonestyWorkerInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    role: Role
    task_path: str
    config: dict[str, Scalar] = {}
    shape: dict[str, Scalar]
    seeds: list[int]
    device: Literal["cpu", "cuda"]
    out_dir: str
    # GPU only: a shape whose work outlasts launch's return (the task's full shape), for the pending-work
    # trial; at the micro shape a side stream's few microseconds finish before anyone looks.
    pending_shape: dict[str, Scalar] | None = None
    inplace: list[int] = []  # the task's INPLACE: inputs launch() writes on purpose (their values are outputs)
    # Candidate side: outputs the task's own launch also leaves computed by torch ops (its reference
    # run says which): what the task does itself is not held against a candidate.
    own_torch_outputs: list[int] = []
    own_state_keys: list[str] = []  # module state the task's own launch changes from call to call


class Saved(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    file: str
    dtype: str


class CallRecord(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str
    seed: int
    ok: bool
    reason: str = ""
    outputs: list[Saved] = []
    torch_ops: list[str] = []
    raw_ops: list[str] = []  # every aten op, allocations and fills included (names the trick of a cheat)
    # Reference side, first seed of a Triton task: per output of the task's own launch (under the task's
    # CONFIG), the torch op its memory was last computed by ("" = a kernel wrote it).
    launch_torch_ops: list[str] = []
    launch_state_keys: list[str] = []  # module state the task's own launch changed on its second call
    triton_launches: int | None = None
    findings: list[tuple[str, str]] = []  # (kind, detail)


class HonestyWorkerResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    device_name: str
    calls: list[CallRecord]
    findings: list[tuple[str, str, str]] = []  # (kind, detail, trial) outside any one call
    not_checked: list[str] = []


class Spy:
    """Audit-hook watcher: frame and gc inspection whose innermost non-stdlib frame is the candidate's."""

    def __init__(self, candidate_file: str) -> None:
        self.file = str(Path(candidate_file).resolve())
        self.stdlib = sysconfig.get_paths()["stdlib"]
        self.events: list[tuple[str, str]] = []
        self.busy = False
        self.trial = "import"

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self.busy:
            return
        spy = event in SPY_EVENTS
        if event == "object.__getattr__" and len(args) == 2 and args[1] in FRAME_ATTRS:
            spy = True
        if not spy:
            return
        self.busy = True
        try:
            frame = sys._getframe(1)
            while frame is not None and (
                frame.f_code.co_filename.startswith(self.stdlib) or frame.f_code.co_filename == __file__
            ):
                frame = frame.f_back
            if frame is not None and str(Path(frame.f_code.co_filename).resolve()) == self.file:
                what = event if event != "object.__getattr__" else f"{type(args[0]).__name__}.{args[1]}"
                kind = "gc_inspection" if event.startswith("gc.") else "frame_inspection"
                self.events.append((kind, f"{what} at line {frame.f_lineno} of {Path(self.file).name}"))
        finally:
            self.busy = False


def _patch_targets() -> list[tuple[str, Any]]:
    """The objects whose attributes a cheat would replace: timers, torch's comparisons and launch paths."""
    import builtins
    import gc

    import numpy
    import torch
    import triton

    owners: list[tuple[str, Any]] = [
        ("time", time),
        ("builtins", builtins),
        ("gc", gc),
        ("torch", torch),
        ("torch.Tensor", torch.Tensor),
        ("torch.testing", torch.testing),
        ("torch.nn.functional", torch.nn.functional),
        ("numpy", numpy),
        ("numpy.testing", numpy.testing),
        ("torch.cuda", torch.cuda),
        ("torch.cuda.Event", torch.cuda.Event),
        ("torch.cuda.Stream", torch.cuda.Stream),
    ]
    import triton.testing
    from triton.runtime import jit

    owners += [("triton.testing", triton.testing), ("triton.runtime.jit.JITFunction", jit.JITFunction)]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        owners.append(("triton.runtime.interpreter.InterpretedFunction", InterpretedFunction))
    except ImportError:
        pass
    return owners


def snapshot() -> dict[tuple[str, str], Any]:
    import types

    snap: dict[tuple[str, str], Any] = {}
    for name, owner in _patch_targets():
        for attr, value in list(vars(owner).items()):
            if callable(value) and not isinstance(value, types.ModuleType):
                snap[(name, attr)] = value
    return snap


def patched_since(before: dict[tuple[str, str], Any]) -> list[str]:
    owners = dict(_patch_targets())
    changed = []
    for (name, attr), value in before.items():
        now = vars(owners[name]).get(attr, None)
        if now is not value:
            changed.append(f"{name}.{attr}" + (" (deleted)" if now is None else ""))
    return changed


def precision_flags() -> dict[str, Any]:
    import torch

    matmul = torch.backends.cuda.matmul
    return {
        "torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "torch.float32_matmul_precision": torch.get_float32_matmul_precision(),
        "matmul.allow_fp16_reduced_precision_reduction": matmul.allow_fp16_reduced_precision_reduction,
        "matmul.allow_bf16_reduced_precision_reduction": matmul.allow_bf16_reduced_precision_reduction,
    }


class LaunchCounter:
    """Counts Triton launches by wrapping the `run` entry of JIT and interpreted functions, and on a GPU
    notes the CUDA stream each launch went to (Triton launches on torch's current stream: a launch inside
    `with torch.cuda.stream(side):` goes to `side`, however fast its work)."""

    def __init__(self, cuda: bool = False) -> None:
        self.count = 0
        self.cuda = cuda
        self.streams: list[int] = []
        from triton.runtime import jit

        classes: list[Any] = [jit.JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        except ImportError:
            pass
        for cls in classes:
            self._wrap(cls)

    def _wrap(self, cls: Any) -> None:
        original = cls.run

        def run(fn_self: Any, *args: Any, **kwargs: Any) -> Any:
            self.count += 1
            if self.cuda:
                import torch

                self.streams.append(int(torch.cuda.current_stream().cuda_stream))
            return original(fn_self, *args, **kwargs)

        cls.run = run


def _digest(inputs: Any, skip: list[int] | None = None) -> str:
    """sha256 over the inputs but those at the indices `skip` (the declared INPLACE ones)."""
    import torch

    h = hashlib.sha256()
    for i, x in enumerate(inputs if isinstance(inputs, (tuple, list)) else (inputs,)):
        if skip and i in skip:
            continue
        if isinstance(x, torch.Tensor):
            t = x.detach().contiguous().cpu()
            h.update(f"{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        else:
            h.update(repr(x).encode())
    return h.hexdigest()


def _plain(t: Any) -> Any:
    import torch

    return t.as_subclass(torch.Tensor) if type(t) is not torch.Tensor else t


def _save(tensors: list[Any], out_dir: Path, stem: str) -> list[Saved]:
    import numpy as np
    import torch

    saved = []
    for i, t in enumerate(tensors):
        t = _plain(t).detach().cpu()
        arr = (t.float() if t.dtype == torch.bfloat16 else t).contiguous().numpy()
        name = f"{stem}.out{i}.npy"
        np.save(out_dir / name, arr, allow_pickle=False)
        saved.append(Saved(file=name, dtype=str(t.dtype).removeprefix("torch.")))
    return saved


def poison(sizes: list[int], device: str) -> None:
    """Fill blocks of these byte sizes with 0xFF (NaN as fp32/fp16/bf16) and free them again."""
    import torch

    blocks = [torch.empty(max(n, 1), dtype=torch.uint8, device=device).fill_(0xFF) for n in sizes]
    if device == "cuda":
        torch.cuda.synchronize()
    del blocks


def _nbytes(values: list[Any]) -> list[int]:
    import torch

    return [v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor)]


def _seed_all(seed: int) -> None:
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _reason(e: BaseException) -> str:
    import traceback

    where = traceback.extract_tb(e.__traceback__)
    at = f" (line {where[-1].lineno} of {Path(where[-1].filename).name})" if where else ""
    return f"{type(e).__name__}: {e}{at}"


def run_reference(req: HonestyWorkerInput, runtime: Any, out_dir: Path, kind: str | None = None,
                  module: Any = None) -> list[CallRecord]:
    records = []
    for seed in req.seeds:
        rec = CallRecord(name=f"seed{seed}", seed=seed, ok=False)
        _seed_all(seed)
        try:
            inputs = runtime.make_inputs(dict(req.shape), seed, req.device)
            recorder = op_recorder()
            with recorder:
                value = runtime.reference(inputs)
        except Exception as e:  # noqa: BLE001 - user code
            rec.reason = f"reference raised {_reason(e)}"
            records.append(rec)
            continue
        tensors = call_outputs(value, inputs, req.inplace, "reference")
        if tensors is None:
            rec.reason = f"reference returned {type(value).__name__}; return a tensor or a tuple of tensors"
        else:
            rec.ok, rec.torch_ops = True, sorted(recorder.ops)
            rec.outputs = _save(tensors, out_dir, rec.name)
            if seed == req.seeds[0] and kind == "triton":
                rec.launch_torch_ops, rec.launch_state_keys = _own_launch(req, runtime, module, seed)
        records.append(rec)
    return records


def _own_launch(req: HonestyWorkerInput, runtime: Any, module: Any, seed: int) -> tuple[list[str], list[str]]:
    """The task's own launch twice, watched: per output of the first call, the torch op that computed its
    memory ("" when a kernel wrote it), and the module state the second call changed. What the task does
    itself is not held against its candidates (torch_output, stateful_launch). A launch that raises here
    says nothing (the candidate's checks judge launches)."""
    try:
        _seed_all(seed)
        inputs = runtime.make_inputs(dict(req.shape), seed, req.device)
        recorder = op_recorder()
        with recorder:
            value = runtime.launch(inputs, **req.config)
        tensors = call_outputs(value, inputs, req.inplace, "launch") or []
        ops = [recorder.computed_by(t) or "" for t in tensors]
        before = module_state(module) if module is not None else {}
        _seed_all(seed)
        runtime.launch(runtime.make_inputs(dict(req.shape), seed, req.device), **req.config)
        after = module_state(module) if module is not None else {}
    except Exception:  # noqa: BLE001 - user code
        return [], []
    return ops, sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


STATE_DEPTH = 3  # containers looked into this deep: a memo dict of tuples of tensors is depth 3
STATE_ITEMS = 64  # items per container fingerprinted (its length is always part of the fingerprint)


def _fingerprint(value: Any, depth: int = STATE_DEPTH) -> Any:
    """A comparable summary of module-level state: scalars by value, tensors by shape, dtype and storage
    (never their values: a workspace buffer the kernel rewrites is not new state), containers by length
    and items, other objects by their attributes. Triton's objects (JIT caches) are left out."""
    import torch

    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return repr(value)
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype), value.untyped_storage().data_ptr())
    if depth == 0:
        return type(value).__name__
    if isinstance(value, dict):
        items = list(value.items())[:STATE_ITEMS]
        return ("dict", len(value), [(_fingerprint(k, depth - 1), _fingerprint(v, depth - 1)) for k, v in items])
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr)[:STATE_ITEMS] if isinstance(value, (set, frozenset)) else value[:STATE_ITEMS]
        return (type(value).__name__, len(value), [_fingerprint(v, depth - 1) for v in items])
    if type(value).__module__.startswith("triton") or not hasattr(value, "__dict__"):
        return type(value).__name__
    return (type(value).__name__, _fingerprint(dict(vars(value)), depth - 1))


def module_state(module: Any) -> dict[str, Any]:
    """What a launch could keep between calls in its file: module globals that are data, and the
    attributes, mutable defaults and closure cells of the file's own functions (not modules, classes,
    Triton kernels or imported functions)."""
    import types

    state: dict[str, Any] = {}
    for name, value in vars(module).items():
        if name.startswith("__") or isinstance(value, (types.ModuleType, type)):
            continue
        if isinstance(value, types.FunctionType):
            if value.__module__ != module.__name__:
                continue
            cells = [c.cell_contents for c in value.__closure__ or () if c.cell_contents is not value]
            parts = (dict(vars(value)), value.__defaults__, value.__kwdefaults__, cells)
            if any(parts):
                state[f"{name}()"] = _fingerprint(list(parts))
            continue
        if callable(value) or type(value).__module__.startswith("triton"):
            continue
        state[name] = _fingerprint(value)
    return state


class CandidateProbe:
    def __init__(
        self,
        req: HonestyWorkerInput,
        runtime: Any,
        kind: str | None,
        spy: Spy,
        counter: LaunchCounter | None,
        out_dir: Path,
        module: Any = None,
    ) -> None:
        self.req, self.runtime, self.kind, self.spy = req, runtime, kind, spy
        self.counter, self.out_dir, self.module = counter, out_dir, module
        self.previous_outputs: list[int] = []
        self.state: dict[str, Any] | None = None  # module_state after the previous call
        self.calls = 0

    def call(self, name: str, seed: int, inputs: Any) -> CallRecord:
        import torch

        req = self.req
        rec = CallRecord(name=name, seed=seed, ok=False)
        self.spy.trial = name
        poison(_nbytes(list(inputs)) + self.previous_outputs, req.device)
        writable = declared_indices(inputs, req.inplace)
        digest = _digest(inputs, writable)
        threads = set(threading.enumerate())
        launches = self.counter.count if self.counter else 0
        streams_before = len(self.counter.streams) if self.counter else 0
        caller = int(torch.cuda.current_stream().cuda_stream) if req.device == "cuda" else 0
        recorder = op_recorder()
        try:
            with recorder:
                value = self.runtime.launch(inputs, **req.config)
                if req.device == "cuda":
                    torch.cuda.current_stream().synchronize()  # only the stream the caller launched on
        except Exception as e:  # noqa: BLE001 - user code: the error is the result
            rec.reason = f"launch raised {_reason(e)}"
            return rec
        rec.torch_ops, rec.raw_ops = sorted(recorder.ops), sorted(recorder.raw)
        rec.triton_launches = (self.counter.count - launches) if self.counter else None
        self._check_state(rec)
        if self.counter is not None and (other := [x for x in self.counter.streams[streams_before:]
                                                   if x != caller]):
            msg = (f"{len(other)} Triton launch(es) went to a CUDA stream other than the caller's: the output "
                   "is still pending when launch returns")
            rec.findings.append(("side_stream", msg))
        tensors = call_outputs(value, inputs, self.req.inplace, "launch")
        if tensors is None:
            rec.reason = f"launch returned {type(value).__name__}; return a tensor or a tuple of tensors"
            return rec
        for i, t in enumerate(tensors):
            if type(t) is not torch.Tensor:
                rec.findings.append(
                    (
                        "tensor_subclass",
                        (
                            f"output {i} is a {type(t).__qualname__}, not a "
                            "plain torch.Tensor (lazy or self-comparing outputs)"
                        ),
                    )
                )
        if self.kind == "triton":
            for i, t in enumerate(tensors):
                if i not in req.own_torch_outputs and (op := recorder.computed_by(t)):
                    rec.findings.append(("torch_output", (
                        f"output {i} was computed by torch ops (last written by aten.{op}) outside any Triton "
                        "kernel: a kernel launched beside it does not make it the kernel's answer")))
        at_return = [_plain(t).detach().clone() for t in tensors]
        if req.device == "cuda":
            torch.cuda.synchronize()  # the whole device: work hidden on another stream lands now
            for i, (t, early) in enumerate(zip(tensors, at_return)):
                if not torch.equal(_plain(t), early):
                    msg = f"output {i} changed when the whole device was synchronised: work on another stream"
                    rec.findings.append(("side_stream", msg))
        time.sleep(LATE_WRITE_WAIT_S)
        alive = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
        if alive:
            names = ", ".join(t.name for t in alive)
            rec.findings.append(
                ("background_thread", f"{len(alive)} thread(s) still running after launch returned: {names}")
            )
            for t in alive:
                t.join(timeout=2.0)
        if req.device == "cuda":
            torch.cuda.synchronize()
        for i, (t, early) in enumerate(zip(tensors, at_return)):
            if not torch.equal(_plain(t), early):
                rec.findings.append(("late_write", f"output {i} changed after launch returned"))
        if _digest(inputs, writable) != digest:
            rec.findings.append(("input_modified", "the call wrote into its inputs"))
        self.previous_outputs = _nbytes(tensors)
        rec.outputs = _save(at_return, self.out_dir, name)
        rec.ok = True
        return rec


    def _check_state(self, rec: CallRecord) -> None:
        """A launch is a function of its inputs: module state that still changes after the first call
        (a lazy set-up is allowed once) is a memo, a counter or a flag a later call acts on."""
        if self.module is None:
            return
        now = module_state(self.module)
        self.calls += 1
        changed = sorted(k for k in now.keys() | (self.state or {}).keys()
                         if now.get(k) != (self.state or {}).get(k) and k not in self.req.own_state_keys)
        if self.state is not None and self.calls > 1 and changed:
            rec.findings.append(("stateful_launch", (
                f"launch changed module state {', '.join(changed)} on call {self.calls}: it keeps state "
                "between calls (a memo, a counter), so its answer or its work depends on what came before")))
        self.state = now

    def pending(self, shape: dict[str, Scalar], seed: int) -> CallRecord:
        """GPU: at a shape whose work outlasts the return, read the outputs in the caller's stream order
        right after launch returns, then again after a device-wide synchronise (every stream): a
        difference is work left pending on another stream or thread."""
        import torch

        rec = CallRecord(name="pending_work", seed=seed, ok=False)
        self.spy.trial = rec.name
        _seed_all(seed)
        inputs = self.runtime.make_inputs(dict(shape), seed, self.req.device)
        torch.cuda.synchronize()
        try:
            value = self.runtime.launch(inputs, **self.req.config)
        except Exception as e:  # noqa: BLE001 - user code
            rec.reason = f"launch raised {_reason(e)}"
            return rec
        tensors = call_outputs(value, inputs, self.req.inplace, "launch")
        if tensors is None:
            rec.reason = f"launch returned {type(value).__name__}; return a tensor or a tuple of tensors"
            return rec
        # Enqueued on the caller's stream: what a consumer of the output on that stream reads.
        at_return = [_plain(t).detach().clone() for t in tensors]
        torch.cuda.synchronize()  # cudaDeviceSynchronize: all streams of the device
        time.sleep(LATE_WRITE_WAIT_S)
        torch.cuda.synchronize()
        where = ", ".join(f"{k}={v}" for k, v in shape.items())
        for i, (t, early) in enumerate(zip(tensors, at_return)):
            if not torch.equal(_plain(t), early):
                msg = (f"at the pending-work shape ({where}) output {i} read in stream order as launch returned "
                       "differs from the output after a device-wide synchronise: its work was still pending")
                rec.findings.append(("side_stream", msg))
        rec.ok = True
        return rec


def run_candidate(req: HonestyWorkerInput, probe: CandidateProbe) -> list[CallRecord]:
    import torch

    seed_a, seed_b = req.seeds[0], req.seeds[1]
    calls = []
    _seed_all(seed_a)
    inputs_a = probe.runtime.make_inputs(dict(req.shape), seed_a, req.device)
    calls.append(probe.call("fresh", seed_a, inputs_a))
    _seed_all(seed_b)
    inputs_b = probe.runtime.make_inputs(dict(req.shape), seed_b, req.device)
    for dst, src in zip(inputs_a, inputs_b):
        if isinstance(dst, torch.Tensor) and isinstance(src, torch.Tensor):
            dst.copy_(src)  # same data_ptr, seed B's values
    calls.append(probe.call("same_pointers", seed_b, tuple(inputs_a)))
    _seed_all(seed_a)
    calls.append(probe.call("repeat", seed_a, probe.runtime.make_inputs(dict(req.shape), seed_a, req.device)))
    if req.device == "cuda" and req.pending_shape is not None:
        calls.append(probe.pending(req.pending_shape, seed_a))
    return calls


def main() -> None:
    req = read_request(HonestyWorkerInput)
    out_dir = Path(req.out_dir)
    spy = Spy(req.task_path)
    not_checked = []
    device_name = "cpu (Triton interpreter)"
    # Imported before the snapshot: torch._dynamo wraps torch.manual_seed when it is first imported
    # (Triton imports it), which would otherwise look like the candidate's patch.
    import torch
    import torch._dynamo
    import triton  # noqa: F401

    from services.toolrunner.task_runtime import import_task, runtime_for, task_kind

    if req.device == "cuda":
        torch.cuda.init()  # CUDA's lazy set-up happens before the snapshot, not inside the candidate's call
        device_name = f"cuda:{torch.cuda.get_device_name(0)}"
    else:
        not_checked.append("side stream: not checked: no GPU (a CPU has no streams)")
    if req.role == "reference":
        module = import_task(req.task_path)
        calls = run_reference(req, runtime_for(module), out_dir, task_kind(module), module)
        write_result(HonestyWorkerResult(device_name=device_name, calls=calls))
        return
    counter = LaunchCounter(cuda=req.device == "cuda")
    flags, before = precision_flags(), snapshot()
    sys.addaudithook(spy.hook)
    findings: list[tuple[str, str, str]] = []
    try:
        module = import_task(req.task_path)
        runtime = runtime_for(module)
    except Exception as e:  # noqa: BLE001 - user code
        write_result(
            HonestyWorkerResult(
                device_name=device_name,
                findings=[("error", f"importing the candidate raised {_reason(e)}", "import")],
                calls=[],
            )
        )
        return
    findings += [("monkey_patch", f"replaced {name}", "import") for name in patched_since(before)]
    probe = CandidateProbe(
        req, runtime, task_kind(module), spy, counter if task_kind(module) == "triton" else None, out_dir,
        module=module,
    )
    calls = run_candidate(req, probe)
    findings += [
        ("monkey_patch", f"replaced {name}", "calls")
        for name in patched_since(before)
        if ("monkey_patch", f"replaced {name}", "import") not in findings
    ]
    flags_after = precision_flags()
    findings += [
        ("monkey_patch", f"changed {k} from {v!r} to {flags_after[k]!r}", "")
        for k, v in flags.items()
        if flags_after[k] != v
    ]
    findings += [(kind, detail, "") for kind, detail in dict.fromkeys(spy.events)]
    write_result(
        HonestyWorkerResult(device_name=device_name, calls=calls, findings=findings, not_checked=not_checked)
    )


if __name__ == "__main__":
    main()
