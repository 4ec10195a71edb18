#!/usr/bin/env bash
# H200 run 21 (device tool): the L2 exhaustive tables on the Hopper-sized GEMM spaces, 1,870 configs in all
# (bmm 170, irregular 680 with PAD_ALIGN, the other three 340 each), cheapest first. Resumable: a table cut
# short says complete: false and a rerun continues it. Copy the JSON files to benchmarks/results/exhaustive/.
set -u
source tests/gpu/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"
cp benchmarks/results/exhaustive/l2_*.json "$R/" 2>/dev/null
timeout 590 python3 benchmarks/exhaustive.py --budget-s 540 --out-dir "$R" --triton-cache /tmp/kp-triton \
    --tasks l2_bmm,l2_matmul_irregular,l2_matmul_tall_skinny,l2_matmul_bias_gelu,l2_matmul_square \
    > "$OUT/run21.log" 2>&1; echo "exhaustive rc=$?"; grep -E "timed, complete|Traceback|Error" "$OUT/run21.log" | tail -8
rm -rf "$OUT/fx" "$R/.triton-cache"
