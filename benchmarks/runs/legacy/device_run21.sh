#!/usr/bin/env bash
# H200 run 21 (device tool), two steps:
#  1. the L2 exhaustive tables on the Hopper-sized GEMM spaces, 1,870 configs in all (bmm 170, irregular
#     680 with PAD_ALIGN, the other three 340 each), cheapest first. Resumable: a table cut short says
#     complete: false and a rerun continues it. Copy the JSON files to benchmarks/results/exhaustive/.
#  2. with the seconds left, torch.compile(max-autotune) of the three L4 tasks (run 19 reached none:
#     block-sparse timed out after 59 s); merge with benchmarks/merge_baselines.py.
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"
cp benchmarks/results/exhaustive/l2_*.json "$R/" 2>/dev/null
T0=$SECONDS
timeout 470 python3 benchmarks/exhaustive.py --budget-s 420 --out-dir "$R" --triton-cache /tmp/kp-triton \
    --tasks l2_bmm,l2_matmul_irregular,l2_matmul_tall_skinny,l2_matmul_bias_gelu,l2_matmul_square \
    > "$OUT/run21.log" 2>&1; echo "exhaustive rc=$? after $((SECONDS - T0)) s"
grep -E "timed, complete|Traceback|Error" "$OUT/run21.log" | tail -8
LEFT=$((575 - (SECONDS - T0)))
if [ "$LEFT" -gt 60 ]; then
  timeout "$LEFT" python3 benchmarks/baselines.py --names compile --budget-s $((LEFT - 15)) \
      --out "$R/baselines_run21.json" --tasks l4_jagged_attention,l4_moe_grouped_gemm,l4_block_sparse_attention \
      >> "$OUT/run21.log" 2>&1; echo "baselines rc=$?"; grep -E "^baselines|wrote" "$OUT/run21.log" | tail -4
fi
rm -rf "$OUT/fx" "$R/.triton-cache"
