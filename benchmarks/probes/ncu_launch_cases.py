"""The program compare_mem_access_ncu.py runs under ncu: launch several tasks' kernels in one process.

    python benchmarks/probes/ncu_launch_cases.py <cases.json>   # [{"task_path", "shape", "config"}, ...]

Like services/toolrunner/worker_lib/launch_task.py, but for every case in turn: one warm-up launch (it
compiles) outside the profiler range, then one launch between cudaProfilerStart/Stop, so
`ncu --profile-from-start off` sees exactly one launch per case, and torch and CUDA start only once.
"""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python benchmarks/probes/ncu_launch_cases.py <cases.json>", file=sys.stderr)
        return 2
    with open(argv[1]) as fh:
        cases = json.load(fh)
    import torch

    from services.toolrunner.worker_lib.task_call import prepare

    t0 = time.monotonic()
    for c in cases:
        call = prepare(c["task_path"], c["shape"], dict(c["config"]), 0, "cuda")
        call()
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        call()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        print(f"[{time.monotonic() - t0:5.1f}s] launched {c['task_path']} {c['config']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
