"""The pure comparison rule of run_correctness: allclose bounds, NaN/Inf handling, shapes, dtypes."""

from __future__ import annotations

import numpy as np

from services.toolrunner.output_compare import compare_arrays, describe_failure


def test_identical_arrays_pass_with_zero_error() -> None:
    r = np.arange(12, dtype=np.float32).reshape(3, 4)
    cmp = compare_arrays(0, r.copy(), r, 0.0, 0.0)
    assert cmp.passed
    assert cmp.mismatches == 0
    assert cmp.max_abs_err == 0.0
    assert cmp.max_rel_err == 0.0
    assert cmp.first_mismatches == []
    assert cmp.shape == [3, 4]
    assert cmp.numel == 12


def test_bound_is_atol_plus_rtol_times_reference() -> None:
    r = np.array([1.0, 100.0, 0.0], dtype=np.float32)
    # allowed: 0.1 + 0.01 * |r| = 0.11, 1.1, 0.1
    inside = compare_arrays(0, r + np.array([0.109, 1.09, 0.099], dtype=np.float32), r, 0.1, 0.01)
    assert inside.passed, inside
    outside = compare_arrays(0, r + np.array([0.109, 1.2, 0.099], dtype=np.float32), r, 0.1, 0.01)
    assert not outside.passed
    assert outside.mismatches == 1
    assert outside.first_mismatches == [[1]]
    assert abs((outside.max_abs_err or 0) - 1.2) < 1e-4
    # relative error excludes the zero reference element: max(0.109/1, 1.2/100)
    assert abs((outside.max_rel_err or 0) - 0.109) < 1e-4


def test_mismatch_indices_are_multi_indices_in_row_major_order_and_capped_at_five() -> None:
    r = np.zeros((4, 5), dtype=np.float32)
    c = r.copy()
    c[1, 2] = c[3, 0] = c[0, 4] = c[2, 2] = c[2, 3] = c[3, 4] = 1.0
    cmp = compare_arrays(0, c, r, 0.0, 0.0)
    assert cmp.mismatches == 6
    assert cmp.first_mismatches == [[0, 4], [1, 2], [2, 2], [2, 3], [3, 0]]


def test_nan_in_candidate_only_is_a_mismatch_and_counted() -> None:
    r = np.ones(8, dtype=np.float32)
    c = r.copy()
    c[[2, 5]] = np.nan
    cmp = compare_arrays(0, c, r, 1e-3, 1e-3)
    assert not cmp.passed
    assert cmp.mismatches == 2
    assert cmp.nan_candidate == 2 and cmp.nan_reference == 0
    assert cmp.max_abs_err == 0.0  # NaN pairs are excluded from the error norms
    assert "2 NaN (reference 0)" in describe_failure(cmp)


def test_matching_nan_and_inf_in_the_same_places_pass() -> None:
    r = np.array([np.nan, np.inf, -np.inf, 1.0], dtype=np.float32)
    cmp = compare_arrays(0, r.copy(), r, 0.0, 0.0)
    assert cmp.passed
    assert cmp.nan_reference == 1 and cmp.inf_reference == 2
    assert cmp.max_abs_err == 0.0


def test_inf_of_the_wrong_sign_is_a_mismatch() -> None:
    r = np.array([np.inf, 1.0], dtype=np.float32)
    c = np.array([-np.inf, 1.0], dtype=np.float32)
    cmp = compare_arrays(0, c, r, 1.0, 1.0)
    assert not cmp.passed
    assert cmp.first_mismatches == [[0]]


def test_finite_candidate_where_reference_is_inf_is_a_mismatch_even_with_huge_tolerance() -> None:
    r = np.array([np.inf], dtype=np.float32)
    cmp = compare_arrays(0, np.array([3e38], dtype=np.float32), r, 1e30, 1.0)
    assert not cmp.passed


def test_shape_mismatch_fails_with_a_reason() -> None:
    cmp = compare_arrays(0, np.zeros(4, np.float32), np.zeros(5, np.float32), 1.0, 1.0)
    assert not cmp.passed
    assert cmp.reason == "shape [4] != reference [5]"
    assert describe_failure(cmp) == "output 0: shape [4] != reference [5]"


def test_lower_precision_output_fails_even_when_values_agree() -> None:
    r = np.linspace(0, 1, 7, dtype=np.float32)
    cmp = compare_arrays(1, r.astype(np.float16), r, 1e-2, 1e-2)
    assert not cmp.passed
    assert cmp.mismatches == 0
    assert cmp.reason == "dtype float16 != reference float32"


def test_widened_bf16_compares_by_the_names_given() -> None:
    r = np.ones(3, np.float32)
    cmp = compare_arrays(0, r.copy(), r, 0.0, 0.0, candidate_dtype="torch.bfloat16",
                         reference_dtype="torch.bfloat16")
    assert cmp.passed
    assert cmp.dtype == "torch.bfloat16"


def test_integer_outputs_must_be_equal_whatever_the_tolerance() -> None:
    r = np.array([1, 2, 3], dtype=np.int32)
    cmp = compare_arrays(0, np.array([1, 2, 4], dtype=np.int32), r, 10.0, 10.0)
    assert not cmp.passed
    assert cmp.atol == 0.0 and cmp.rtol == 0.0
    assert cmp.mismatches == 1


def test_describe_failure_names_count_error_and_first_index() -> None:
    r = np.zeros(10, np.float32)
    c = r.copy()
    c[7:] = 0.5
    text = describe_failure(compare_arrays(0, c, r, 0.0, 0.0))
    assert text == "output 0: 3/10 mismatches, max abs err 0.5 (atol 0, rtol 0), first at [7]"
