"""The patterns added with issue 22: each has a planted corpus case it ranks first (or, for a smell
without real cost, names without a high finding) and a clean counterpart where it stays silent."""

from __future__ import annotations

import json

import pytest

from services.decomposer.decompose import decompose
from services.decomposer.patterns import PATTERNS
from tests.decomposer import decomposer_corpus as corpus

# pattern -> (planted case, its clean counterpart)
ADDED = {
    "warp_divergence": ("cuda_lane_parity_branch", "cuda_clean_warp_parity_branch"),
    "store_in_loop_invariant_address": ("store_in_loop", "clean_store_after_loop"),
    "redundant_global_store": ("double_store", "clean_single_store"),
    "global_memory_round_trip": ("global_roundtrip", "clean_registers_no_roundtrip"),
    "scalar_load_in_loop": ("pointer_chase", "clean_tile_sum"),
    "int64_address_arithmetic": ("add_int64_offsets", "clean_add"),
    "integer_modulo_in_address": ("repeat_modulo", "clean_repeat_2d"),
    "k_loop_masked_every_iteration": ("oss_tutorial_matmul_kmask", "clean_matmul_bk64_4k"),
    "dot_k_tile_small": ("matmul_bk16", "clean_matmul_bk64_4k"),
    "exp_instead_of_exp2": ("online_softmax_exp", "clean_online_softmax_exp2"),
    "division_by_sqrt_not_rsqrt": ("norm_div_sqrt", "oss_tutorial_layernorm_rstd"),
    "libdevice_call_in_loop": ("tanh_libdevice_loop", "clean_tanh_sigmoid_loop"),
    "barrier_in_loop": ("barrier_in_loop", "clean_tile_sum"),
    "spin_lock_atomic_cas": ("oss_tutorial_layernorm_dw_lock", "clean_dw_partials"),
    "tiny_tile_per_program": ("small_tile_add", "clean_add"),
    "atomic_output_accumulation": ("colsum_atomic_split", "clean_colsum_partials"),
    "read_only_load_not_nc": ("cuda_saxpy_no_restrict", "cuda_clean_saxpy"),
    # library 60 -> 80
    "volatile_access_in_loop": ("cuda_volatile_loop", "cuda_clean_poly_loop"),
    "memory_fence_in_loop": ("cuda_fence_in_loop", "cuda_clean_fence_after_loop"),
    "device_heap_allocation": ("cuda_device_malloc", "cuda_clean_register_scratch"),
    "global_atomics_not_privatised": ("cuda_histogram_global", "cuda_clean_histogram_shared"),
    "masked_load_without_other_into_reduction": ("rowmax_no_other", "clean_rowmax_other"),
    "store_wider_than_inputs": ("add_bf16_fp32_out", "clean_add_bf16"),
    "atomic_stronger_ordering_than_needed": ("accumulate_acq_rel", "clean_accumulate_relaxed"),
    "shared_memory_tree_reduction": ("cuda_oss_samples_reduce_tree", "cuda_clean_shuffle_reduce"),
    "barrier_after_last_shared_use": ("cuda_trailing_barrier", "cuda_clean_transpose_tiled"),
    "dot_accumulator_low_precision": ("matmul_fp16_acc", "clean_matmul_fp32_acc"),
    "matmul_on_cuda_cores": ("cuda_oss_samples_matrixmul", "cuda_clean_wmma_gemm"),
    "block_not_multiple_of_warp": ("cuda_saxpy_block100", "cuda_clean_saxpy"),
    "float_promoted_to_double": ("cuda_double_literal_loop", "cuda_clean_poly_loop"),
    "noinline_call_in_loop": ("cuda_noinline_call_loop", "cuda_clean_inline_call_loop"),
    "trig_slow_range_reduction": ("cuda_precise_sin_loop", "cuda_clean_fast_sin_loop"),
    "int64_division": ("cuda_int64_div_loop", "cuda_int_div_loop"),
    "timing_instrumentation_left_in": ("cuda_clock_saxpy", "cuda_clean_saxpy"),
    "exp_without_max_subtraction": ("softmax_no_max_shift", "clean_softmax"),
    "reduction_in_half_precision": ("rowsum_bf16", "clean_rowsum_bf16_fp32"),
    "division_by_runtime_scalar": ("scale_div_scalar", "clean_scale_reciprocal"),
    "atomic_cas_retry_loop": ("cuda_atomic_cas_max", "cuda_clean_atomic_int_max"),
}
# patterns whose CUDA C++ predicate came with issue 22 (services/decomposer/native.py)
CUDA_ALSO = {
    "barrier_in_loop": ("cuda_barrier_in_loop", "cuda_clean_poly_loop"),
    "integer_division_in_hot_loop": ("cuda_int_div_loop", "cuda_clean_poly_loop"),
    "slow_precise_math": ("cuda_precise_div_loop", "cuda_clean_poly_loop"),
    "debug_print_or_assert": ("cuda_printf_left_in", "cuda_clean_saxpy"),
}


def _findings(case: str) -> tuple[list, dict]:
    art, facts, meta = corpus.load(case)
    return decompose(art, facts).findings, meta


@pytest.mark.parametrize("pattern", sorted(ADDED) + [f"{p}@cuda" for p in CUDA_ALSO])
def test_planted_case_names_it_and_the_clean_twin_does_not(pattern: str) -> None:
    pid = pattern.split("@")[0]
    planted, clean = (CUDA_ALSO if pattern.endswith("@cuda") else ADDED)[pid]
    found, meta = _findings(planted)
    assert not pattern.endswith("@cuda") or meta.get("language") == "cuda"
    assert meta["expect"] == pid
    if meta.get("kind") == "no_cost":
        assert pid in [f.pattern for f in found[:3]] and not any(f.severity == "high" for f in found), found
    else:
        assert found[0].pattern == pid, [f.pattern for f in found]
    assert pid not in [f.pattern for f in _findings(clean)[0]]


def test_every_added_pattern_is_in_the_table_and_oss_cases_name_their_origin() -> None:
    ids = {p.id for p in PATTERNS}
    assert set(ADDED) | set(CUDA_ALSO) <= ids and len(ids) == len(PATTERNS) >= 80
    oss = 0
    for d in corpus.case_dirs():
        meta = json.loads((d / "meta.json").read_text())
        if meta.get("kind") == "oss":
            oss += 1
            assert meta["origin"].startswith(
                ("triton-lang/triton python/tutorials/", "NVIDIA/cuda-samples ")
            ), d.name
    assert oss >= 5


def test_a_row_mask_under_a_row_wise_reduction_needs_no_other() -> None:
    # rows[:, None] < M broadcast along the reduced axis 1: masked rows reduce into themselves only
    found, _ = _findings("clean_rownorm_rowmask")
    assert "masked_load_without_other_into_reduction" not in [f.pattern for f in found]


def test_a_wrapped_index_is_not_called_uncoalesced() -> None:
    # offs % n_src: contiguity is unprovable, not proven strided (the H200 would tell, through ncu)
    found, _ = _findings("repeat_modulo")
    assert "uncoalesced_strided_access" not in [f.pattern for f in found]
