"""GPU only: host-side cost of the launch telemetry hooks per Triton launch.

Launches a tiny Triton kernel (vector add of 4096 fp32, so the launch path dominates) back to back and
times the host loop with time.perf_counter in four modes: no hooks; hooks counting only
(sample_fraction=0); timing 1/16 of launches with CUDA events; timing every launch. Each mode runs
`--reps` rounds of `--launches` launches with a device synchronize at the end of each round, interleaved
across modes so clock drift hits all modes alike; the report gives the median us/launch with p20/p80
and the overhead against no hooks. Writes JSON to --out and, if set, $KPILOT_FIXTURE_OUT/telemetry/.

    .venv/bin/python benchmarks/bench_sdk_overhead.py [--launches 2000] [--reps 15]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    pos = (len(s) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--launches", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/sdk_overhead.json"))
    args = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        print(
            "unavailable: no GPU: this benchmark times real Triton launches; run it on the H200",
            file=sys.stderr,
        )
        return 2
    import triton
    import triton.language as tl

    from services.telemetry.sdk import LaunchTelemetry

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

    x = torch.randn(4096, device="cuda")
    out = torch.empty_like(x)
    grid = (4,)

    def loop() -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.launches):
            add_kernel[grid](x, x, out, 4096, BLOCK=1024)
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / args.launches * 1e6

    modes = {"no_hooks": None, "count_only": 0.0, "time_1_in_16": 1 / 16, "time_all": 1.0}
    tels = {}
    for name, frac in modes.items():
        if frac is not None:
            t = LaunchTelemetry(sample_fraction=frac)
            tels[name] = t
    loop()  # compile and warm up
    results: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(args.reps):
        for name in modes:
            t = tels.get(name)
            if t is not None:
                t.instrument(add_kernel)
                t.install()
            results[name].append(loop())
            if t is not None:
                t.uninstall()
                add_kernel.launch_metadata = None
                t.drain()
    base = statistics.median(results["no_hooks"])
    row = {
        "bench": "sdk_launch_overhead",
        "launches_per_round": args.launches,
        "rounds": args.reps,
        "modes": {
            m: {
                "median_us_per_launch": statistics.median(v),
                "p20": pct(v, 20),
                "p80": pct(v, 80),
                "overhead_us": statistics.median(v) - base,
            }
            for m, v in results.items()
        },
        "method": "time.perf_counter around back-to-back launches + cuda synchronize, modes interleaved",
        "provenance": {
            "device": torch.cuda.get_device_name(),
            "cuda": str(torch.version.cuda),
            "triton": str(triton.__version__),
            "torch": str(torch.__version__),
            "python": platform.python_version(),
        },
    }
    text = json.dumps(row, indent=1)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    fx = os.environ.get("KPILOT_FIXTURE_OUT")
    if fx:
        p = Path(fx) / "telemetry" / "sdk_overhead.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
