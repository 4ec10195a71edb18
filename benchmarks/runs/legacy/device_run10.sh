#!/usr/bin/env bash
# H200 run 10 (device tool), the last ~8 minutes of the session's window:
#  1. the decomposer's ncu corpus again, scored by the cause-before-symptom ranking chosen from run 9's
#     counters (a fresh measurement, not the replay), with the two CUDA launch descriptions fixed;
#  2. the six suite rows run 8 did not reach (attention d64 and causal, the pipeline, the three L4 tasks),
#     appended to a copy of benchmarks/results/h200/suite/kernels.json.
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"; cp benchmarks/results/h200/suite/kernels.json "$R/kernels.json"
timeout 200 python3 benchmarks/bench_decomposer_ncu.py --out "$R/bench_decomposer_ncu.json" --budget-s 150 \
    --batch-timeout-s 90 > "$OUT/ncu.log" 2>&1; echo "ncu rc=$?"; grep -E "^batch|^static|^measured" "$OUT/ncu.log"
T=l3_attention_d64,l3_attention_d64_causal,l3_pipeline,l4_jagged_attention,l4_block_sparse_attention
T=$T,l4_moe_grouped_gemm
timeout 250 python3 benchmarks/run_suite.py --append --skip-compile --tasks $T --budget-s 215 \
    --baselines "$R/baselines_run10.json" --out-json "$R/kernels.json" --out-md "$R/kernels.md" \
    > "$OUT/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^\[|wrote|spent|Traceback" "$OUT/suite.log" | tail -9
rm -rf "$OUT/fx"
