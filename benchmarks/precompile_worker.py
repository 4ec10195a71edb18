"""Worker (run through sandbox.run_worker, GPU): launch each given config of a task once, to fill the
Triton on-disk cache.

Nothing is timed and no output is checked. The first launch of a config JIT-compiles it and writes the
compiled kernel into TRITON_CACHE_DIR; a later process that shares that directory (exhaustive.py's timing
chunks) loads the cached cubin instead of compiling. Several of these workers run side by side on one GPU,
each over its own slice of the configs, so the compiles use several CPU cores.

A config whose launch fails (out of resources, compile-time assertion, ptxas error, anything else) is
an entry of `errors`, not the end of the job. A CUDA error that corrupts the context makes every later
launch of this process fail too; those configs show up in `errors` and get compiled by the timing chunk.
"""

from __future__ import annotations

from typing import Any

import msgspec

ERROR_CHARS = 300  # as the autotune worker's per-config errors


class PrecompileJob(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    configs: list[dict[str, Any]]  # each merged over the task's CONFIG, as the autotune worker does
    shape: str = "full"  # must be the timing shape: Triton specializes kernels on integer arguments
    seed: int = 0


class PrecompileResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    compiled: int  # configs whose launch (and the sync after it) returned
    errors: dict[str, str] = {}  # benchmarks.search_eff.config_key(config) -> "Type: first line"


NO_GPU = (
    "unavailable: no GPU (the precompile worker launches each config on CUDA to fill Triton's cache; "
    "run it on the H200)"
)


def describe(e: BaseException) -> str:
    """`Type: first line of the message`, at most ERROR_CHARS long."""
    first = (str(e).strip().splitlines() or [""])[0]
    return f"{type(e).__name__}: {first}"[:ERROR_CHARS]


def main() -> None:
    import torch

    from benchmarks.search_eff import config_key
    from services.toolrunner.worker_lib.io import read_request, write_result
    from services.toolrunner.worker_lib.task_call import prepare

    job = read_request(PrecompileJob)
    if not torch.cuda.is_available():
        raise SystemExit(NO_GPU)  # one line on stderr, exit status 1: the sandbox's "failed" + message
    call = prepare(job.task_path, job.shape, {}, job.seed)
    compiled = 0
    errors: dict[str, str] = {}
    for cfg in job.configs:
        try:
            call.with_config(cfg)()
            torch.cuda.synchronize()
            compiled += 1
        except Exception as e:  # noqa: BLE001 - a config that fails is reported; the timing run records it
            errors[config_key(cfg)] = describe(e)
    write_result(PrecompileResult(compiled=compiled, errors=errors))


if __name__ == "__main__":
    main()
