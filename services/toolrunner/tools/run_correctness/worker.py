"""Worker: run one side of a correctness check (the candidate's launch or the task's reference).

Each case builds inputs with the file's own `make_inputs(shape, seed, device)`, hashes them (so the
runner can prove both sides saw the same inputs), runs `launch(inputs, **config)` or `reference(inputs)`
and saves every output tensor as a .npy file in `out_dir` (bfloat16 widened to float32, which is exact),
with the sha256 of the bytes it wrote: the runner refuses a file that changed after it was saved. A case
that raises is reported and the next case still runs: a failed candidate is a result. The process ends
with the result (`finish`), so no hook of the candidate's runs after it.
"""

from __future__ import annotations

import hashlib
import io
import random
import time
import traceback
from pathlib import Path
from typing import Any, Literal

import msgspec

from services.toolrunner.worker_lib.io import finish, read_request
from services.toolrunner.worker_lib.tensors import call_outputs, declared_indices, inplace_problem
from shared.messages import Scalar

Role = Literal["candidate", "reference"]


class CaseSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    shape_name: str
    shape: dict[str, Scalar]
    seed: int


class CorrectnessWorkerInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    role: Role
    task_path: str  # the file whose make_inputs and launch (candidate) or reference (reference) run
    config: dict[str, Scalar] = {}  # launch keywords; the candidate side only
    cases: list[CaseSpec]
    device: Literal["cpu", "cuda"]
    out_dir: str
    # The task's INPLACE: inputs launch() writes; their values after the call are outputs, and only the
    # other inputs count for `inputs_modified` (examples/README.md, "In-place outputs").
    inplace: list[int] = []


class SavedTensor(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    file: str  # name inside out_dir
    shape: list[int]
    dtype: str  # torch's name without "torch.", e.g. "bfloat16"
    sha256: str = ""  # of the file's bytes as written: anything that rewrites it later is found out


class CaseOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    shape_name: str
    seed: int
    status: Literal["ok", "error", "not_checked"]
    reason: str = ""
    input_dtype: str = ""  # floating dtype of the inputs as built ("" when there is none)
    input_digest: str = ""  # sha256 over the inputs' dtypes, shapes and bytes before the call
    inputs_modified: bool = False  # the call wrote into its inputs
    outputs: list[SavedTensor] = []
    seconds: float | None = None  # wall time of the call (synchronised on a GPU); not a benchmark


class CorrectnessWorkerResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    cases: list[CaseOutput]
    device_name: str


BF16_ON_CPU = "not checked on CPU: bf16 unsupported by the interpreter"


def _digest(inputs: Any, skip: list[int] | None = None) -> tuple[str, str]:
    """sha256 over every tensor input (dtype, shape, bytes) and the repr of other inputs, but those at
    the indices `skip`; and the first floating dtype seen."""
    import torch

    h = hashlib.sha256()
    float_dtype = ""
    items = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
    for i, x in enumerate(items):
        if skip and i in skip:
            continue
        if isinstance(x, torch.Tensor):
            t = x.detach().contiguous().cpu()
            h.update(f"{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
            if t.is_floating_point() and not float_dtype:
                float_dtype = str(t.dtype).removeprefix("torch.")
        else:
            h.update(repr(x).encode())
    return h.hexdigest(), float_dtype


def _save(outputs: list[Any], out_dir: Path, stem: str) -> list[SavedTensor]:
    import numpy as np
    import torch

    saved = []
    for i, t in enumerate(outputs):
        t = t.detach().cpu()
        dtype = str(t.dtype).removeprefix("torch.")
        arr = (t.float() if t.dtype == torch.bfloat16 else t).contiguous().numpy()
        name = f"{stem}.out{i}.npy"
        buf = io.BytesIO()  # hashed in memory, then written: the hash is of what this process saved
        np.save(buf, arr, allow_pickle=False)
        data = buf.getvalue()
        (out_dir / name).write_bytes(data)
        saved.append(SavedTensor(file=name, shape=list(t.shape), dtype=dtype, sha256=hashlib.sha256(data).hexdigest()))
    return saved


def _last_words(e: BaseException) -> str:
    where = traceback.extract_tb(e.__traceback__)
    at = f" (line {where[-1].lineno} of {Path(where[-1].filename).name})" if where else ""
    return f"{type(e).__name__}: {e}{at}"


def _run_case(req: CorrectnessWorkerInput, runtime: Any, case: CaseSpec, out_dir: Path) -> CaseOutput:
    import numpy as np
    import torch

    out = CaseOutput(shape_name=case.shape_name, seed=case.seed, status="error")
    random.seed(case.seed)
    np.random.seed(case.seed)
    torch.manual_seed(case.seed)
    try:
        inputs = runtime.make_inputs(dict(case.shape), case.seed, req.device)
    except Exception as e:  # noqa: BLE001 - user code
        out.reason = f"make_inputs raised {_last_words(e)}"
        return out
    out.input_digest, out.input_dtype = _digest(inputs)
    if req.device == "cpu" and out.input_dtype == "bfloat16":
        out.status, out.reason = "not_checked", BF16_ON_CPU
        return out
    if why := inplace_problem(req.inplace, inputs):
        out.reason = f"{why}; fix INPLACE in the task"
        return out
    writable = declared_indices(inputs, req.inplace)
    untouched = _digest(inputs, writable)[0] if writable else out.input_digest
    call = runtime.launch if req.role == "candidate" else runtime.reference
    start = time.perf_counter()
    try:
        value = call(inputs, **req.config) if req.role == "candidate" else call(inputs)
        if req.device == "cuda":
            torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - user code: the error is the result
        what = "launch" if req.role == "candidate" else "reference"
        out.reason = f"{what} raised {_last_words(e)}"
        return out
    out.seconds = time.perf_counter() - start
    out.inputs_modified = _digest(inputs, writable)[0] != untouched
    tensors = call_outputs(value, inputs, req.inplace, "launch" if req.role == "candidate" else "reference")
    if tensors is None:
        out.reason = (f"{'launch' if req.role == 'candidate' else 'reference'} returned "
                      f"{type(value).__name__}; return a tensor or a tuple of tensors"
                      + (" (or None: the INPLACE inputs are its outputs)" if req.inplace else ""))
        return out
    out.outputs = _save(tensors, out_dir, f"{case.shape_name.replace(':', '_')}.seed{case.seed}")
    out.status = "ok"
    return out


def main() -> None:
    req = read_request(CorrectnessWorkerInput)
    from services.toolrunner.task_runtime import import_task, runtime_for

    runtime = runtime_for(import_task(req.task_path))
    out_dir = Path(req.out_dir)
    device_name = "cpu (Triton interpreter)"
    if req.device == "cuda":
        import torch

        device_name = f"cuda:{torch.cuda.get_device_name(0)}"
    cases = [_run_case(req, runtime, case, out_dir) for case in req.cases]
    finish(CorrectnessWorkerResult(cases=cases, device_name=device_name))


if __name__ == "__main__":
    main()
