from __future__ import annotations

from pathlib import Path

import pytest

from services.critic.chain import MessageIndex, build_chain
from services.critic.review import TaskBounds, review
from shared.messages import ChangeDescription, Measurement, Provenance, Verdict

from .chains import ADD_BYTES, MATMUL_BYTES, MATMUL_FLOPS, Job, add_ms, job, matmul_ms, request

MATMUL = TaskBounds(flops=MATMUL_FLOPS, bytes_moved=MATMUL_BYTES, precision="exact", dtype="bfloat16",
                    source="examples/matmul.py formulas")
ADD = TaskBounds(flops=float(2**28), bytes_moved=ADD_BYTES, precision="exact", dtype="float32")


def decide(j: Job, bounds: TaskBounds | None = MATMUL, drop: tuple[str, ...] = ()):
    idx = MessageIndex()
    for m in j.messages:
        if m.id not in drop:
            idx.add(m)
    return review(build_chain(j.verdicts[-1], idx), bounds)


def test_the_probes_matmul_gain_is_accepted_within_the_roofline() -> None:
    d = decide(job())
    assert d.accepted and d.status == "verified" and d.reasons == []
    # 546 / 89 TFLOP/s on the H200; the roofline allows 784 / 89 = 8.8x from that baseline.
    assert d.speedup.value == pytest.approx(545.86 / 88.96, rel=1e-3)
    assert d.roofline.checked and d.roofline.max_speedup == pytest.approx(783.5 / 88.96, rel=2e-3)
    assert d.roofline.note.startswith("within the roofline")


def test_a_speedup_beyond_the_roofline_is_rejected() -> None:
    # 1.0 ms for 2 * 8192^3 FLOPs is 1100 TFLOP/s, beyond the 784 TFLOP/s measured bf16 ceiling.
    d = decide(job(speedup=(matmul_ms("tri_mm_32_32_32_1_4_1"), 1.0)))
    assert not d.accepted and d.layer == "full"
    assert any(r.startswith("beyond the roofline") and "roofline floor 1.402 ms" in r for r in d.reasons)


def test_the_roofline_comes_from_verdict_measurements_when_no_bounds_are_given() -> None:
    j = job(speedup=(matmul_ms("tri_mm_32_32_32_1_4_1"), 1.0))

    j.verdicts[-1].measurements += [Measurement(name="flops", value=MATMUL_FLOPS, unit="flop"),
                                    Measurement(name="bytes_moved", value=MATMUL_BYTES, unit="byte")]
    assert any("beyond the roofline" in r for r in decide(j, bounds=None).reasons)
    unknown = decide(job(speedup=(matmul_ms("tri_mm_32_32_32_1_4_1"), 1.0)), bounds=None)
    assert unknown.accepted and unknown.roofline.note.startswith("not checked")


def test_a_real_add_at_4_38_tbps_passes_and_one_that_skips_work_does_not() -> None:
    base, cand = add_ms("add_B4096_ms"), add_ms("add_B256_ms")  # 4.29 -> 4.38 TB/s, above 4.35 by 0.7 %
    real = job(kernel="add_kernel", trigger=request(), job_id="job-add", speedup=(base, cand))
    d = decide(real, ADD)
    assert d.accepted, d.reasons
    assert d.roofline.achieved_bytes_per_s == pytest.approx(4.382e12, rel=1e-3)
    cheat = job(kernel="add_kernel", trigger=request(), job_id="job-add", speedup=(base, 0.3))
    assert any("beyond the roofline" in r for r in decide(cheat, ADD).reasons)


@pytest.mark.parametrize("change, policy, dtype, rejected", [
    (ChangeDescription(change="source_edit", target="matmul.py:52", search="acc += tl.dot(a, b)",
                       replace="acc += tl.dot(a, b, input_precision=\"tf32\")"), "exact", "float32", True),
    (ChangeDescription(change="source_edit", target="matmul.py:52", search="acc += tl.dot(a, b)",
                       replace="acc += tl.dot(a, b, input_precision=\"tf32\")"),
     "allow_tf32", "float32", False),
    (ChangeDescription(change="source_edit", target="add.py:12", search="x = tl.load(a_ptr + offs)",
                       replace="x = tl.load(a_ptr + offs).to(tl.float16)"), "allow_tf32", "float32", True),
    (ChangeDescription(change="source_edit", target="matmul.py:60", search="c = acc",
                       replace="c = acc.to(tl.bfloat16)"), "exact", "bfloat16", False),
    (ChangeDescription(change="source_edit", target="matmul.py:60", search="c = acc",
                       replace="c = acc.to(tl.bfloat16)"), "exact", "", True),
    (ChangeDescription(change="set_constexpr", target="ALLOW_TF32", value=True), None, "float32", True),
])
def test_precision_changes_are_held_to_the_tasks_policy(change, policy, dtype, rejected) -> None:
    bounds = TaskBounds(flops=MATMUL_FLOPS, bytes_moved=MATMUL_BYTES, precision=policy, dtype=dtype)
    d = decide(job(changes=[change]), bounds)
    assert (not d.accepted) == rejected, d.reasons
    if rejected:
        assert all(r.startswith("precision:") for r in d.reasons)


def test_a_hazard_annotation_vetoes() -> None:
    hazard = ChangeDescription(change="source_edit", target="matmul.py:58", search="tl.store",
                               replace="tl.store",
                               rationale="atomic reduction order changes: needs human review")
    d = decide(job(changes=[hazard]))
    assert not d.accepted and d.reasons[0].startswith("hazard: candidate")


def test_a_missing_layer_is_rejected() -> None:
    d = decide(job(layers=("static", "full")))
    assert d.reasons == ["missing layer: no micro verdict for this candidate"]


def test_a_causation_id_that_does_not_resolve_is_rejected() -> None:
    j = job()
    d = decide(j, drop=(j.update.id,))
    assert not d.accepted and any("does not resolve" in r for r in d.reasons)


def test_on_cpu_a_skipped_full_layer_gives_a_proposed_patch_not_a_verified_one() -> None:
    d = decide(job(full="skipped"))
    assert d.accepted and d.status == "proposed" and d.not_verified == "speedup not measured: no GPU"
    assert d.speedup.value is None and d.speedup.not_measured == "no GPU"
    assert d.roofline.note == "not checked: speedup not measured (no GPU)"


def test_a_verifier_failure_is_a_rejection_charged_to_its_layer() -> None:
    j = job(full=None)
    j.verdicts[1].status = "fail"
    j.verdicts[1].reasons = ["max abs error 0.5 > atol 1e-2 at shape edge:0"]
    idx = MessageIndex()
    for m in j.messages:
        idx.add(m)
    d = review(build_chain(j.verdicts[1], idx), MATMUL)
    assert not d.accepted and d.layer == "micro"
    assert "verifier: micro layer failed: max abs error 0.5 > atol 1e-2 at shape edge:0" in d.reasons


def test_a_pass_inside_the_noise_and_a_skip_for_other_reasons_are_rejected() -> None:
    same = add_ms("torch_add_ms")
    assert any("within the noise" in r for r in decide(job(speedup=(same, same))).reasons)
    j = job(full=None)
    skipped = Verdict(source="verifier", candidate_id=j.candidate.id, kernel=j.candidate.kernel, layer="full",
                      status="skipped", reasons=["budget exhausted"], **j.candidate.caused())
    j.verdicts.append(skipped)
    j.messages.append(skipped)
    assert decide(j).reasons == ["full layer skipped for a reason other than no GPU: budget exhausted"]


def test_a_verdict_flagged_needs_review_vetoes_even_when_it_passed() -> None:
    sass = Path(__file__).parents[1] / "fixtures" / "sass" / "histogram_kernel.cuobjdump.sass"
    atomic = next(line.strip() for line in sass.read_text().splitlines() if "ATOMG" in line)
    j = job()
    j.verdicts[0].needs_review = True
    j.verdicts[0].annotations = [atomic]
    d = decide(j)
    assert not d.accepted
    assert d.reasons == [(f"hazard: static verdict {j.verdicts[0].id} says "
                         f"'needs human review (flagged): {atomic}'")]


def test_the_verifiers_roofline_bound_is_used_when_the_task_formulas_are_not_known() -> None:
    j = job(speedup=(matmul_ms("tri_mm_32_32_32_1_4_1"), 1.0))
    j.verdicts[-1].measurements.append(Measurement(name="roofline_ms", value=MATMUL_FLOPS / 784e12 * 1e3,
                                                   unit="ms (least possible time on the H200)"))
    d = decide(j, bounds=None)
    assert any("roofline floor 1.402 ms" in r for r in d.reasons)


def test_a_speedup_without_a_ci_or_off_the_gpu_is_only_proposed() -> None:
    j = job()
    j.verdicts[-1].measurements[0].low = None
    d = decide(j)
    assert d.accepted and d.status == "proposed" and "no confidence interval" in d.not_verified
    j = job()
    j.verdicts[-1].provenance = Provenance(device="none")
    d = decide(j)
    assert d.status == "proposed" and "not measured on a GPU" in d.not_verified
    assert decide(job()).status == "verified" and decide(job()).not_verified == ""


def test_a_floor_the_baseline_itself_beats_blames_the_formulas_not_the_candidate() -> None:
    """H200 r52's captured swiglu: 3.61e8 bytes counted for 2.71e8 moved, original 0.0681 ms. A candidate
    faster than that is judged by its measured gain; the floor is reported as not checked, with why."""
    over = TaskBounds(flops=0.0, bytes_moved=3.61e8, precision="exact", dtype="float16")
    d = decide(job(kernel="add_kernel", trigger=request(), job_id="job-swiglu", speedup=(0.0681, 0.0600)), over)
    assert not any("beyond the roofline" in r for r in d.reasons), d.reasons
    assert not d.roofline.checked and "baseline 0.0681 ms is itself below the roofline floor" in d.roofline.note
    honest = TaskBounds(flops=0.0, bytes_moved=2.71e8, precision="exact", dtype="float16")
    cheat = job(kernel="add_kernel", trigger=request(), job_id="job-swiglu", speedup=(0.0681, 0.0300))
    assert any("beyond the roofline" in r for r in decide(cheat, honest).reasons)
