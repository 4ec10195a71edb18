"""The main job `make run` runs against a stack that `kpilot up` started.

1. Register the example kernel tasks in the kernel registry (so telemetry can name them).
2. Feed telemetry, one of two ways:
   - live (the default when torch sees a CUDA GPU, or `--live`): the example workload
     (services/kpilot/live_workload.py) runs the example kernels in their untuned CONFIG in a subprocess
     for at most `--live-s` seconds, under the launch SDK, and publishes this GPU's NVML samples; it is
     stopped as soon as a state event names a registered kernel, so the verifier has the GPU to itself.
   - replay (`--replay`, and always on a machine without a GPU): the recorded H200 trace
     `examples/traces/h200_poor_matmul_lowbw.jsonl` (a matmul in its untuned 32x32x32 config, then an
     under-occupied copy) is replayed into the telemetry service.
   Either way the service's detectors fire, e.g. `events.state.tc_underutilization...` naming the hot
   kernel `matmul_kernel`.
3. The planner opens a job for it, the verifier runs the funnel (on a CPU machine: static checks and
   interpreter correctness, timing "not measured: no GPU"; on a GPU: timed A/B against the original), the
   critic publishes a verified patch when the speedup was measured on the GPU, and on a CPU machine a
   proposed patch (`patches.proposed.<kernel>`: correct, speed not measured), never a verified one.
4. Print each state event and patch, the evidence chain of the best one, and how to tail the streams.

    python -m services.kpilot.demo --nats nats://127.0.0.1:4222 [--live | --replay] [--timeout 900]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

from shared.bus import Bus
from shared.messages import ProposedPatch, RejectedPatch, StateChangeEvent, VerifiedPatch, decode
from shared.service import DEFAULT_NATS

ROOT = Path(__file__).resolve().parents[2]
TASKS = ("examples/matmul.py", "examples/vector_add.py", "examples/row_softmax.py")
TRACE = ROOT / "examples" / "traces" / "h200_poor_matmul_lowbw.jsonl"
# The critic's chain grace is 10 s (services/critic/critic.py) plus its bus back-off; 30 s covers both.
PATCH_WAIT_S = 30.0


class NoGpu(RuntimeError):
    """`--live` on a machine without a CUDA GPU; the message names the fix."""


def choose_mode(live: bool, replay: bool, gpu: bool) -> str:
    """'live' or 'replay': what was asked, else live exactly when there is a GPU."""
    if live and replay:
        raise ValueError("--live and --replay exclude each other: pass one (or neither for the default)")
    if live and not gpu:
        raise NoGpu("no GPU: run without --live to replay the recorded H200 trace")
    return "replay" if replay or not gpu else "live"


def gpu_present() -> bool:
    import torch
    return bool(torch.cuda.is_available())


async def run(url: str, timeout_s: float, speed: float, mode: str = "replay", live_s: float = 60.0) -> int:
    from services.kpilot import live_workload
    from services.kpilot.commands.register import register_manifests
    from services.telemetry import bustrace
    from services.toolrunner.tasks import load_task
    from shared.signing import trusted_key
    from shared.signing import verify as verify_signature

    manifests = [load_task(ROOT / t) for t in TASKS]
    kernels: set[str] = set()
    for kernel, task in await register_manifests(url, manifests):
        kernels.add(kernel)
        print(f"[demo] registered {kernel} -> {os.path.relpath(task, ROOT)}")
    bus = await Bus.connect(url, "kpilot")
    critic_key = [await trusted_key(bus.js)]  # each verified patch is checked against the critic's key
    patches: list[VerifiedPatch] = []
    proposed: list[ProposedPatch] = []
    rejected: list[RejectedPatch] = []
    done = asyncio.Event()
    decided = asyncio.Event()  # a verified or proposed patch arrived

    async def on_patch(raw) -> None:  # type: ignore[no-untyped-def]
        msg = decode(raw.data)
        if isinstance(msg, VerifiedPatch):
            patches.append(msg)
            decided.set()
            speed_txt = (f"{msg.speedup.value:.2f}x" if msg.speedup and msg.speedup.value is not None else
                         f"not measured: {msg.speedup.not_measured if msg.speedup else 'unknown'}")
            check = verify_signature(msg, critic_key[0])
            sig_txt = f"signature ok ({check.reason})" if check.ok else f"SIGNATURE FAILED: {check.reason}"
            print(f"[demo] VERIFIED {raw.subject}: {msg.kernel} v{msg.version} config={msg.config} "
                  f"speedup: {speed_txt}; {sig_txt}")
        elif isinstance(msg, ProposedPatch):
            proposed.append(msg)
            decided.set()
            print(f"[demo] PROPOSED {raw.subject}: {msg.kernel} v{msg.version} config={msg.config} "
                  f"(not verified: {msg.not_verified})")
        elif isinstance(msg, RejectedPatch):
            rejected.append(msg)
            print(f"[demo] rejected {msg.kernel} {msg.candidate_id}: {'; '.join(msg.reasons)[:160]}")

    async def on_job(raw) -> None:  # type: ignore[no-untyped-def]
        data = json.loads(raw.data)
        print(f"[demo] job {data.get('job_id')} {data.get('kernel')}: {data.get('status')} "
              f"{data.get('note', '')[:120]}")
        if data.get("status") not in ("open", "planning", "verifying"):
            done.set()

    subs = [await bus.nc.subscribe("patches.>", cb=on_patch), await bus.nc.subscribe("jobs.>", cb=on_job)]
    await bus.nc.flush()

    fired: list[StateChangeEvent] = []

    def on_event(e: StateChangeEvent) -> None:
        fired.append(e)
        hot = ", ".join(f"{k.kernel} {k.share:.0%}" for k in e.hot_kernels)
        print(f"[demo] event {e.event} {e.edge} on {e.node}/{e.gpu}: {e.detail} [hot: {hot}]")

    if mode == "live":
        print(f"[demo] live: the example workload (untuned CONFIGs) runs on this GPU for at most {live_s:g} s")
        summary = await live_workload.feed(url, kernels, live_s, on_event)
        print(f"[demo] live workload: {summary}")
        if not any(e.edge == "start" and {k.kernel for k in e.hot_kernels} & kernels for e in fired):
            print("[demo] no state event named a kernel of the workload; see <state-dir>/logs/telemetry-*.log "
                  "and `kpilot tail 'telemetry.>'`", file=sys.stderr)
            return 1
    else:
        print(f"[demo] replaying {TRACE.relative_to(ROOT)} at {speed:g}x through the telemetry service")
        stats = await bustrace.replay(bus, TRACE, speed=speed, on_event=on_event, linger_s=3.0)
        print(f"[demo] replayed {stats.samples} samples; {len(stats.events)} state events")
        if not any(e.event == "tc_underutilization" and e.edge == "start" for e in fired):
            print("[demo] the tensor-core event did not fire; see .kpilot/logs/telemetry-*.log",
                  file=sys.stderr)
            return 1
    start = time.monotonic()
    try:
        await asyncio.wait_for(done.wait(), timeout_s)
    except TimeoutError:
        print(f"[demo] the job did not finish within {timeout_s:.0f} s (it goes on in the background)")
    if done.is_set() and not decided.is_set():
        # The critic decides from the same verdicts the planner closes the job on: its patch can come
        # a moment after the job's last update.
        try:
            await asyncio.wait_for(decided.wait(), PATCH_WAIT_S)
        except TimeoutError:
            pass
    for s in subs:
        await s.unsubscribe()
    await bus.close()
    print(f"[demo] {len(patches)} verified patch(es), {len(proposed)} proposed, {len(rejected)} rejection(s) "
          f"in {time.monotonic() - start:.0f} s after the trigger")
    best: VerifiedPatch | ProposedPatch | None = patches[-1] if patches else (proposed[-1] if proposed else None)
    if best is not None:
        print(f"[demo] evidence chain of {best.kernel} v{best.version}:")
        for link in best.evidence_chain:
            print(f"         {link.step:<10} {link.message_id}  {link.summary[:100]}")
        print("[demo] diff:\n" + "\n".join("         " + line for line in best.diff.splitlines()[:30]))
    if isinstance(best, ProposedPatch):
        print(f"[demo] {best.kernel} v{best.version} is PROPOSED, not verified: {best.not_verified}. A patch is "
              "verified only with a speedup measured on the target GPU whose confidence interval clears the "
              "policy; run the demo (or `kpilot optimize`) on a GPU machine to time it.")
    print(f"[demo] tail the patches: .venv/bin/kpilot tail 'patches.>' --since 1h --nats {url}")
    return 0 if patches or proposed else 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nats", default=os.environ.get("KPILOT_NATS", DEFAULT_NATS))
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for the job")
    ap.add_argument("--speed", type=float, default=20.0, help="trace replay speed-up")
    feed = ap.add_mutually_exclusive_group()
    feed.add_argument("--live", action="store_true", help="run the example workload on this GPU")
    feed.add_argument("--replay", action="store_true", help="replay the recorded H200 trace")
    ap.add_argument("--live-s", type=float, default=60.0, help="longest live workload run, s")
    args = ap.parse_args()
    try:
        mode = choose_mode(args.live, args.replay, gpu=False if args.replay else gpu_present())
    except NoGpu as e:
        print(f"demo: {e}", file=sys.stderr)
        sys.exit(2)
    from shared import logging as kplog
    kplog.configure("demo", "warning", json=False)
    sys.exit(asyncio.run(run(args.nats, args.timeout, args.speed, mode, args.live_s)))


if __name__ == "__main__":
    main()
