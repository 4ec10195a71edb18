#!/usr/bin/env bash
# H200 run 8 (device tool), prepared for the next GPU window: the suite rows runs 4-5 left short (eight
# L1/L2 tasks whose budget share ended before round 0, transpose_cuda with the new round-0 steps, attention
# d64 with the correctness fallback, the three L4 tasks), appended to benchmarks/results/h200/suite/.
set -u
B=${1:-540}  # wall-clock budget of the suite run in seconds (bash benchmarks/runs/legacy/device_run8.sh 400)
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"; cp benchmarks/results/h200/suite/kernels.json "$R/kernels.json"
T=l1_relu,l1_gelu,l1_col_reduce,l1_rms_norm,l1_cross_entropy,l1_transpose_cuda,l2_bmm,l2_matmul_irregular
T=$T,l2_matmul_bias_gelu,l3_attention_d64,l3_attention_d64_causal,l3_pipeline,l4_jagged_attention
T=$T,l4_block_sparse_attention,l4_moe_grouped_gemm
timeout $(( B + 40 )) python3 benchmarks/run_suite.py --append --skip-compile --tasks $T --budget-s $B \
    --baselines "$R/baselines_run8.json" --out-json "$R/kernels.json" --out-md "$R/kernels.md" \
    > "$OUT/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^\[|wrote|Traceback" "$OUT/suite.log" | tail -16
rm -rf "$OUT/fx"
