"""Cost-aware severity (services/decomposer/cost.py) and fix preconditions, on captured corpus kernels."""

from __future__ import annotations

import msgspec
import pytest

from services.decomposer import cost
from services.decomposer.decompose import decompose
from shared.tools.decompose import DynamicEvidence
from tests.decomposer import decomposer_corpus as corpus


def test_ncu_time_unit_is_the_one_that_gives_a_gpu_clock() -> None:
    # 88,593 elapsed cycles: 44.8 us at 1.98 GHz whether ncu printed 0.044832 (ms) or 44.832 (us)
    assert cost.ncu_time_s({"gpu__time_duration.sum": 0.044832, "gpc__cycles_elapsed.max": 88593}) == (
        pytest.approx(44.832e-6)
    )
    assert cost.ncu_time_s({"gpu__time_duration.sum": 44.832, "gpc__cycles_elapsed.max": 88593}) == (
        pytest.approx(44.832e-6)
    )
    assert cost.ncu_time_s({"gpu__time_duration.sum": 44.832}) is None  # no cycles: unit unknown


def _floor(case: str) -> float:
    _art, facts, _ = corpus.load(case)
    f = cost.achievable_floor(facts, [])
    assert f is not None
    return f


def test_a_smell_at_the_roofline_is_info_and_one_far_from_it_keeps_its_severity() -> None:
    art, facts, _ = corpus.load("scalar_rows_nodiv")  # scalar loads, planted: high without a time
    floor = _floor("scalar_rows_nodiv")
    static = decompose(art, facts).findings[0]
    assert static.pattern == "scalar_global_access" and static.severity == "high"
    assert static.saves_s and static.cost.startswith("modelled")
    at_roof = decompose(art, msgspec.structs.replace(facts, measured_s=floor / 0.97)).findings
    assert all(f.severity == "info" for f in at_roof)  # within 10 %: nothing to gain worth a high
    sga = next(f for f in at_roof if f.pattern == "scalar_global_access")
    assert "cost not borne out" in sga.evidence[-1] and sga.saves_s <= floor * 0.04
    slow = decompose(art, msgspec.structs.replace(facts, measured_s=3 * floor)).findings[0]
    assert slow.pattern == "scalar_global_access" and slow.severity == "high"
    assert slow.saves_s == pytest.approx(min(slow.score * 3 * floor, 2 * floor))


def test_a_time_from_another_shape_is_not_used() -> None:
    art, facts, _ = corpus.load("clean_add")
    fast = msgspec.structs.replace(facts, measured_s=_floor("clean_add") / 5)  # 5x faster than possible
    assert cost.kernel_time(fast)[0] is not None
    assert all(f.cost.startswith("modelled") or not f.cost for f in decompose(art, fast).findings)


def test_fp32_dot_without_tensor_cores_ranks_high_under_either_policy_with_its_own_fix() -> None:
    art, facts, _ = corpus.load("matmul_fp32_ieee")
    for precision, fixes, words in (
        ("allow_tf32", ["add_hint", "source_edit"], "input_precision='tf32'"),
        ("exact", ["source_edit"], "tf32x3"),
    ):
        top = decompose(art, msgspec.structs.replace(facts, precision=precision)).findings[0]
        assert top.pattern == "dot_fp32_on_cuda_cores" and top.severity == "high", precision
        assert top.transformations == fixes and words in top.evidence[0]


def test_no_alignment_hint_on_offsets_that_are_not_divisible() -> None:
    art, facts, _ = corpus.load("scalar_rows_nodiv")  # row strides 4100: not a multiple of 16
    top = decompose(art, facts).findings[0]
    assert "add_hint" not in top.transformations and top.fix_transform == ""
    assert "stride_x" in top.evidence[-1] and "would be false" in top.evidence[-1]
    art, facts, _ = corpus.load("mask_nodiv_add")  # the bound n has no divisibility
    top = decompose(art, facts).findings[0]
    assert top.transformations == ["source_edit"] and top.fix_transform == "even_k_specialise"


def test_ncu_evidence_of_a_clean_kernel_at_its_roofline_raises_nothing_above_info() -> None:
    """H200 run 10 counters of clean_add (44.8 us for a 46.3 us floor): the medium stall_dominant it got
    before (issue 22) is info now."""
    import json
    from pathlib import Path

    run10 = (
        Path(__file__).parents[1] / "fixtures" / "h200" / "decomposer_ncu" / "run10_bench_decomposer_ncu.json"
    )
    row = next(c for c in json.loads(run10.read_text())["cases"] if c["case"] == "clean_add")
    art, facts, _ = corpus.load("clean_add")
    found = decompose(
        art, msgspec.structs.replace(facts, dynamic=DynamicEvidence(ncu=row["counters"]))
    ).findings
    assert found and {f.severity for f in found} == {"info"}


def _r33(case: str) -> list:
    """The findings of `case` with its counters from H200 run r33 (tests/fixtures/h200/decomposer_ncu)."""
    import json
    from pathlib import Path

    r33 = Path(__file__).parents[1] / "fixtures" / "h200" / "decomposer_ncu" / "r33_bench_decomposer_ncu.json"
    row = next(c for c in json.loads(r33.read_text())["cases"] if c["case"] == case)
    art, facts, _ = corpus.load(case)
    return decompose(
        art, msgspec.structs.replace(facts, dynamic=DynamicEvidence(ncu=row["counters"]))
    ).findings


def test_the_floor_a_measured_time_is_held_against_counts_the_shortest_kernel() -> None:
    _art, facts, _ = corpus.load("clean_rowmax_other")  # 67 MB read: 15.4 us at 4.35 TB/s
    work = cost.work_floor(facts, [])
    assert work == pytest.approx(67108864 / 4.35e12)
    assert cost.achievable_floor(facts, []) == pytest.approx(work + 2.368e-6)  # tiny_add on the H200


@pytest.mark.parametrize(
    ("case", "us"), [("clean_rowmax_other", 18.0), ("clean_rownorm_rowmask", 19.2), ("clean_repeat_2d", 19.0)]
)
def test_clean_67_mb_reductions_are_at_their_floor_once_the_launch_counts(case: str, us: float) -> None:
    """H200 r33: 18-19 us for a 15.4-16.4 us roofline; without the 2.37 us every launch pays they were at
    80-86 % and kept medium stall/occupancy findings (issue 22: clean kernels at their roof get none)."""
    found = _r33(case)
    assert found and {f.severity for f in found} == {"info"}
    assert all("cost not borne out" in " ".join(f.evidence) for f in found)
    assert f"ncu gpu__time_duration {us:.1f} us" in found[0].cost


def test_a_short_clean_kernel_near_its_launch_floor_gets_no_high_latency_finding() -> None:
    """clean_rowsum_bf16_fp32 on the H200 (r33): 13.2 us for 33.6 MB, compute 35 % and memory 54 % of peak.
    Against the 7.7 us roofline alone latency_bound said it saves 3.4 us (26 %: high); with the launch time
    the floor is 10.1 us and at most 3.1 us (23 %) is there to save: medium."""
    found = _r33("clean_rowsum_bf16_fp32")
    lat = next(f for f in found if f.pattern == "latency_bound")
    assert not any(f.severity == "high" for f in found) and lat.severity == "medium"
    t, floor = 13.184e-6, 33554432 / 4.35e12 + 2.368e-6
    assert lat.saves_s == pytest.approx(t - floor) and lat.saves_s / t < 0.25
