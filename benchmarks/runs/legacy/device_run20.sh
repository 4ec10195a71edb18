#!/usr/bin/env bash
# H200 run 20 (device tool): the five L2 suite rows again, on the Hopper-sized GEMM spaces (64-256 tiles,
# 4/8 warps, 1 or 3-5 stages; start 64x64x32, 1 stage) and with l2_matmul_irregular's PAD_ALIGN variant,
# appended to a copy of the committed kernels.json (copy it back first with run 19's rows in it).
# Eager and torch.matmul are measured in the run with the roofline; the compile column is merged afterwards
# from runs 17-18 (same shapes: compile times the reference, not the task's config).
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"; cp benchmarks/results/h200/suite/kernels.json "$R/kernels.json"
timeout 585 python3 benchmarks/run_suite.py --append --skip-compile --budget-s 545 \
    --tasks l2_matmul_irregular,l2_bmm,l2_matmul_square,l2_matmul_tall_skinny,l2_matmul_bias_gelu \
    --baselines "$R/baselines_run20.json" --out-json "$R/kernels.json" --out-md "$R/kernels.md" \
    > "$OUT/run20.log" 2>&1; echo "suite rc=$?"; grep -E "^\[|wrote|Traceback|spent" "$OUT/run20.log"
rm -rf "$OUT/fx"
