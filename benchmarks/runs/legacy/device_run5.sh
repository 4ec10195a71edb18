#!/usr/bin/env bash
# H200 run 5 (device tool): the kernel suite's L3 and L4 tasks, appended to run 4's L1/L2 rows
# (benchmarks/results/h200/suite/kernels.json), then the decomposer's corpus attribution with ncu evidence
# (benchmarks/bench_decomposer_ncu.py: CUDA C++ cases first, then the clean Triton kernels, then the rest,
# until its budget is spent). Outputs under $OUT/results.
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"; cp benchmarks/results/h200/suite/kernels.json "$R/kernels.json"
t0=$(date +%s)
L34=l3_attention_d64,l3_attention_d64_causal,l3_attention_d128,l3_attention_d128_causal,l3_pipeline
L34=$L34,l4_jagged_attention,l4_block_sparse_attention,l4_moe_grouped_gemm
timeout 345 python3 benchmarks/run_suite.py --append --skip-compile --tasks $L34 --budget-s 315 \
    --baselines "$R/baselines_l3l4.json" --out-json "$R/kernels.json" --out-md "$R/kernels.md" \
    > "$OUT/suite_l3l4.log" 2>&1; echo "suite rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "^\[|wrote|Error|Traceback" "$OUT/suite_l3l4.log" | tail -12
left=$(( 565 - ($(date +%s) - t0) ))
timeout $(( left )) python3 benchmarks/bench_decomposer_ncu.py --out "$R/bench_decomposer_ncu.json" \
    --budget-s $(( left - 40 )) --case-timeout-s 40 --case cuda_atomic_one_address --case cuda_branch_barrier --case cuda_clean_copy_float4 --case cuda_clean_saxpy --case cuda_clean_transpose_tiled --case cuda_fp64_loop --case cuda_local_array --case cuda_smem_column --case cuda_spills --case cuda_strided_read --case cuda_transpose_naive --case clean_add --case clean_bias_rows --case clean_gelu --case clean_matmul_bf16 --case clean_matmul_tf32 --case clean_rowsum_loop --case clean_softmax --case clean_transpose_tile --case atomic_histogram_loop --case atomic_one_counter --case bias_in_loop --case branch_barrier_loop --case column_copy --case conversions_loop --case double_load --case flag_branch_loop --case fp64_math --case gather_indices --case heavy_regs --case idle_threads --case int_div_loop --case mask_nodiv_add --case matmul_2warps --case matmul_bm32 --case matmul_fp32_ieee --case matmul_n8 --case matmul_one_stage --case matmul_row_major_grid --case matmul_spills --case matmul_tiny_tile --case matmul_upcast --case one_warp_blocks --case precise_sqrt_loop --case print_left_in --case reduce_in_loop --case scalar_matmul_nodiv --case scalar_rows_nodiv --case small_grid_chunks --case strided_gather --case strided_scatter --case tail_wave --case tiny_add --case transpose_flat --case unfused_scale_add > "$OUT/ncu.log" 2>&1
echo "ncu rc=$? in $(( $(date +%s) - t0 )) s"; tail -4 "$OUT/ncu.log"
rm -rf "$OUT/fx"
