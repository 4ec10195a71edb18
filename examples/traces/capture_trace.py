"""GPU only: record a telemetry trace of two known-bad workloads on the H200 (and one good one).

Phases, each `--phase-s` seconds (default 40, longer than the detectors' 30 s minimum duration):
  1. poor_matmul  bf16 4096^3 Triton matmul in a 32x32x32 tile, 4 warps, 1 stage (GPU.md: this config
                  reaches 89 of 784 TFLOP/s at 8192^3): the tensor pipe is mostly idle.
  2. low_bw_copy  an fp32 copy of 2^24 elements by only 8 programs (8 of 132 SMs busy): memory bound,
                  far below the 4.35 TB/s copy ceiling.
  3. good_matmul  the same matmul at 128x256x64, 8 warps, 4 stages (688 TFLOP/s in GPU.md).
Meanwhile a thread samples NVML + GPM every `--period` seconds and drains the launch SDK (durations of
1 in 8 launches by CUDA events), writing RawSample and LaunchRecord lines to a trace (services/telemetry/
trace.py). At the end the trace is replayed through the encoder and detectors and their events printed.

    .venv/bin/python examples/traces/capture_trace.py [--out examples/traces/h200_poor_matmul_lowbw.jsonl]

If $KPILOT_FIXTURE_OUT is set the trace is copied to $KPILOT_FIXTURE_OUT/telemetry/ as well. The matmul is
the task examples/matmul.py (its CONFIG is the poor config); the copy kernel is embedded because
examples/vector_add.py's add already runs near the bandwidth ceiling in any block size (GPU.md), and the
point here is a memory-bound kernel far below it.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import triton
import triton.language as tl

from examples import matmul as matmul_task
from services.telemetry.detectors import DetectorBank
from services.telemetry.encoding import StateEncoder
from services.telemetry.nvml_sampler import NvmlSampler, as_text
from services.telemetry.records import LaunchRecord, RawSample
from services.telemetry.sdk import LaunchTelemetry, kernel_shares
from services.telemetry.trace import TraceHeader, TraceWriter, read_trace


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, NPROG: tl.constexpr):
    pid = tl.program_id(0)
    for start in range(pid * BLOCK, n, NPROG * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("examples/traces/h200_poor_matmul_lowbw.jsonl"))
    ap.add_argument("--phase-s", type=float, default=40.0)
    ap.add_argument("--period", type=float, default=1.0, help="sampling period in seconds (GPM needs >= 0.1)")
    ap.add_argument("--size", type=int, default=4096, help="matmul M = N = K")
    args = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        print(
            "unavailable: no GPU: this script records real NVML/GPM telemetry; run it on the H200",
            file=sys.stderr,
        )
        return 2
    sampler = NvmlSampler(node=platform.node() or "gpu-node", indices=[torch.cuda.current_device()])
    tel = LaunchTelemetry(sample_fraction=1 / 8)
    tel.instrument(matmul_task.matmul_kernel, copy_kernel)
    tel.install()
    header = TraceHeader(
        created=time.time(),
        node=sampler.node,
        note=f"capture_trace.py: poor_matmul, low_bw_copy, good_matmul, {args.phase_s:g} s each, "
        f"sampled every {args.period:g} s",
        provenance={
            "device": torch.cuda.get_device_name(),
            "driver": as_text(sampler.nvml.nvmlSystemGetDriverVersion()),
            "cuda": str(torch.version.cuda),
            "triton": str(triton.__version__),
            "torch": str(torch.__version__),
            "method": "NVML + GPM device-wide samples; launch durations by CUDA events on 1 of 8 launches",
        },
    )
    stop = threading.Event()
    lock = threading.Lock()
    writer = TraceWriter(args.out, header)
    phases: list[tuple[str, float]] = []

    def sample_loop() -> None:
        next_t = time.time() + args.period
        while not stop.is_set():
            time.sleep(max(0.0, next_t - time.time()))
            next_t += args.period
            samples = sampler.sample()
            launches = tel.drain()
            with lock:
                for r in launches:
                    writer.write(r)
                for s in samples:
                    writer.write(s)

    n = args.size
    inputs = matmul_task.make_inputs({"m": n, "n": n, "k": n}, 0, "cuda")
    x = torch.randn(1 << 24, device="cuda")
    y = torch.empty_like(x)

    def matmul(bm: int, bn: int, bk: int, group: int, warps: int, stages: int) -> None:
        matmul_task.launch(
            inputs, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group, num_warps=warps, num_stages=stages
        )

    def copy() -> None:
        copy_kernel[(8,)](x, y, x.numel(), BLOCK=1024, NPROG=8)

    poor = matmul_task.CONFIG  # 32x32x32, GROUP_M 1, 4 warps, 1 stage
    work = [
        (
            "poor_matmul",
            lambda: matmul(
                poor["BLOCK_M"],
                poor["BLOCK_N"],
                poor["BLOCK_K"],
                poor["GROUP_M"],
                poor["num_warps"],
                poor["num_stages"],
            ),
        ),
        ("low_bw_copy", copy),
        ("good_matmul", lambda: matmul(128, 256, 64, 8, 8, 4)),
    ]
    for _, fn in work:  # compile outside the recorded phases
        fn()
    torch.cuda.synchronize()
    thread = threading.Thread(target=sample_loop, daemon=True)
    thread.start()
    try:
        for name, fn in work:
            t0 = time.time()
            phases.append((name, t0))
            while time.time() - t0 < args.phase_s:
                for _ in range(8):
                    fn()
                torch.cuda.synchronize()
    finally:
        stop.set()
        thread.join()
        tel.uninstall()
        writer.close()
        sampler.close()
    print("phases:", ", ".join(f"{p} from {t:.1f}" for p, t in phases))

    _, entries = read_trace(args.out)
    samples = [e for e in entries if isinstance(e, RawSample)]
    print(f"wrote {args.out}: {len(samples)} samples, {len(entries) - len(samples)} launch records")
    enc: dict[str, StateEncoder] = {}
    det: dict[str, DetectorBank] = {}
    recent: list[LaunchRecord] = []
    for e in entries:
        if isinstance(e, LaunchRecord):
            recent.append(e)
            continue
        recent = [r for r in recent if r.t_last >= e.ts - 5.0]  # launch shares over the last 5 s
        ks = kernel_shares(recent)
        enc.setdefault(e.gpu, StateEncoder(node=e.node, gpu=e.gpu, period_s=args.period)).encode(e, ks)
        for ev in det.setdefault(e.gpu, DetectorBank(e.node, e.gpu)).feed(e, ks):
            print(f"  t+{ev.ts - phases[0][1]:6.1f}s {ev.event} {ev.edge}: {ev.detail}")
    fx = os.environ.get("KPILOT_FIXTURE_OUT")
    if fx:
        dest = Path(fx) / "telemetry" / args.out.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(args.out, dest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
