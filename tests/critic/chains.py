"""Builders for critic test inputs: evidence chains whose timings come from the H200 probe.

The figures are real (tests/fixtures/h200-probe): the bf16 8192^3 Triton matmul at 32x32x32/4 warps/
1 stage (89 TFLOP/s) is the baseline and 128x128x32/GROUP_M 8/3 stages (546 TFLOP/s) the candidate; the
fp32 vector add of 2^28 elements at BLOCK 4096 (0.750 ms) is the baseline and BLOCK 256 (0.735 ms, 4.38 TB/s,
above the 4.35 TB/s copy "ceiling") the candidate. Times are the task's FLOPs over the measured rate, as
the probe reports them. The probe measured no confidence interval, so a full verdict's speedup carries the
relative CI of the one H200 bench_ab record (tests/fixtures/h200/bench_ab_vector_add.json, ABBA bootstrap
95 %): the critic verifies only a speedup whose CI clears the policy.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from shared.messages import (
    Candidate,
    ChangeDescription,
    JobUpdate,
    KernelShare,
    Measurement,
    Message,
    OptimizeRequest,
    Provenance,
    StateChangeEvent,
    StateTriple,
    Verdict,
)

PROBE = Path(__file__).resolve().parents[1] / "fixtures" / "h200-probe"
MATMUL_FLOPS = 2.0 * 8192**3  # examples/matmul.py flops() at the full shape
MATMUL_BYTES = 3.0 * 8192**2 * 2  # A, B read and C written once, bf16
ADD_N = 2**28
ADD_BYTES = 3.0 * ADD_N * 4  # a and b read, c written, fp32


def probe(name: str) -> dict[str, object]:
    return json.loads((PROBE / name).read_text())


def matmul_ms(config: str) -> float:
    tflops = probe("matmul_sdpa.json")[config]["tflops"]  # type: ignore[index]
    return MATMUL_FLOPS / (float(tflops) * 1e12) * 1e3


def ci_fraction() -> tuple[float, float]:
    """(low / speedup, high / speedup) of the H200 bench_ab record."""
    ab = json.loads((PROBE.parent / "h200" / "bench_ab_vector_add.json").read_text())
    return ab["ci_low"] / ab["speedup"], ab["ci_high"] / ab["speedup"]


def add_ms(key: str) -> float:
    return float(probe("bench.json")[key])  # type: ignore[arg-type]


PROV = Provenance(device="NVIDIA H200", driver="580.159.04", cuda="13.0", triton="3.6.0", torch="2.11",
                  method="triton.testing.do_bench median (h200-probe 2026-12-01)")


class Job(msgspec.Struct, kw_only=True):
    """One job's messages in publish order, and the ones a test wants by role."""

    messages: list[Message]
    trigger: Message
    update: JobUpdate
    candidate: Candidate
    verdicts: list[Verdict]


def tc_event(kernel: str = "matmul_kernel", event: str = "tc_underutilization", ts: float | None = None,
             share: float = 0.82, mean_us: float = 12360.0, config: dict | None = None,
             others: list[KernelShare] | None = None) -> StateChangeEvent:
    extra = {"ts": ts} if ts is not None else {}
    hot = [KernelShare(kernel=kernel, share=share, launches=120, mean_us=mean_us, config=config or {})]
    return StateChangeEvent(
        source="telemetry", event=event, edge="start", node="node0", gpu="0",  # type: ignore[arg-type]
        detector=event, detail="tensor_core_util 11.4 < 30 for 30s",
        triples=[StateTriple("tensor_core_util", "current", "global_avg", 11.4, "pct", "nvml_gpm:5"),
                 StateTriple("sm_active", "current", "global_avg", 96.0, "pct", "nvml_gpm:2")],
        hot_kernels=sorted(hot + (others or []), key=lambda k: -k.share), **extra)


def job(*, kernel: str = "matmul_kernel", version: int = 1, trigger: Message | None = None,
        full: Verdict | None | str = "pass", speedup: tuple[float, float] | None = None,
        changes: list[ChangeDescription] | None = None, job_id: str = "job-matmul",
        parent: Job | None = None, layers: tuple[str, ...] = ("static", "micro", "full"),
        note: str = "tc_underutilization: 32x32 tiles keep 1 stage; finding tensor_core_tile_small at "
                    "matmul.py:41, sass:0x0450") -> Job:
    """trigger -> job update (diagnosis) -> candidate -> static, micro, full verdicts.

    `speedup` = (baseline_ms, candidate_ms); default the probe's matmul pair. `full="skipped"` is the CPU
    case ("not measured: no GPU"); `full=None` publishes no full verdict.
    """
    trig = trigger or (parent.trigger if parent else tc_event(kernel))
    base_ms, cand_ms = speedup or (matmul_ms("tri_mm_32_32_32_1_4_1"), matmul_ms("tri_mm_128_128_32_8_4_3"))
    cause = parent.verdicts[-1] if parent else trig
    update = JobUpdate(source="planner", kernel=kernel, status="planning", iteration=version, note=note,
                       job_id=job_id, causation_id=cause.id)
    cand = Candidate(
        source="planner", kernel=kernel, task_path="/work/main/examples/matmul.py", version=version,
        parent_id=parent.candidate.id if parent else None,
        config={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 3},
        changes=changes if changes is not None else [
            ChangeDescription(change="set_constexpr", target="BLOCK_M", value=128,
                              rationale="tensor_core_tile_small @ matmul.py:41, sass:0x0450: 32x32 tiles"),
            ChangeDescription(change="set_num_stages", target="matmul_kernel", value=3,
                              rationale="k_loop_not_pipelined: 1 stage at matmul.py:47")],
        diff="--- a/matmul.py\n+++ b/matmul.py\n@@ -10 +10 @@\n-CONFIG = {\"BLOCK_M\": 32}\n"
             "+CONFIG = {\"BLOCK_M\": 128}\n",
        job_id=job_id, causation_id=update.id)
    verdicts: list[Verdict] = []
    for layer in layers:
        if layer == "full":
            if full is None:
                continue
            if isinstance(full, Verdict):
                verdicts.append(full)
                continue
            verdicts.append(full_verdict(cand, base_ms, cand_ms, status=full))
        else:
            verdicts.append(Verdict(source="verifier", candidate_id=cand.id, kernel=kernel, layer=layer,
                                    status="pass", reasons=[f"{layer} checks passed"],
                                    **cand.caused()))  # type: ignore[arg-type]
    return Job(messages=[trig, update, cand, *verdicts], trigger=trig, update=update, candidate=cand,
               verdicts=verdicts)


def full_verdict(cand: Candidate, base_ms: float, cand_ms: float, status: str = "pass") -> Verdict:
    if status == "skipped":
        return Verdict(source="verifier", candidate_id=cand.id, kernel=cand.kernel, layer="full",
                       status="skipped", reasons=["perf: not measured, no GPU"],
                       measurements=[Measurement(name="speedup", unit="x", not_measured="no GPU")],
                       **cand.caused())
    return Verdict(source="verifier", candidate_id=cand.id, kernel=cand.kernel, layer="full",
                   status=status, reasons=["speedup outside the noise"], provenance=PROV,  # type: ignore
                   measurements=[Measurement(name="speedup", value=base_ms / cand_ms, unit="x",
                                             low=base_ms / cand_ms * ci_fraction()[0],
                                             high=base_ms / cand_ms * ci_fraction()[1]),
                                 Measurement(name="baseline_median_ms", value=base_ms, unit="ms"),
                                 Measurement(name="candidate_median_ms", value=cand_ms, unit="ms")],
                   **cand.caused())


def request(kernel: str = "add_kernel") -> OptimizeRequest:
    return OptimizeRequest(source="kpilot", task_path="/work/main/examples/vector_add.py", kernel=kernel,
                           job_id="job-add")
