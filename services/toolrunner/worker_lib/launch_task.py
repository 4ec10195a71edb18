"""The program ncu and compute-sanitizer run: launch a task's kernel on the GPU and exit.

Run as `python -m services.toolrunner.worker_lib.launch_task <request.json>` (a LaunchTaskRequest) by the
ncu and sanitize workers, never directly by the runner. One warm-up launch compiles the kernel (and runs
any autotuning) outside the profiler range; with `profile_range` the measured launch is bracketed by
cudaProfilerStart/Stop, so `ncu --profile-from-start off -c 1` sees exactly that launch.
"""

from __future__ import annotations

import sys

import msgspec

from shared.messages import Scalar


class LaunchTaskRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    shape: str = "micro"
    config: dict[str, Scalar] = {}
    seed: int = 0
    profile_range: bool = False
    warmup: bool = True


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m services.toolrunner.worker_lib.launch_task <request.json>", file=sys.stderr)
        return 2
    with open(argv[1], "rb") as fh:
        req = msgspec.json.decode(fh.read(), type=LaunchTaskRequest)
    import torch

    from services.toolrunner.worker_lib.task_call import prepare

    call = prepare(req.task_path, req.shape, dict(req.config), req.seed, "cuda")
    if req.warmup:
        call()
        torch.cuda.synchronize()
    if req.profile_range:
        torch.cuda.profiler.start()
    call()
    torch.cuda.synchronize()
    if req.profile_range:
        torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
