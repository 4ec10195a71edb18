#!/usr/bin/env bash
# H200 run 16 (device tool): the two L1 tasks that had no verified patch, with their new variant knobs
# (l1_col_reduce SPLIT_M, l1_cross_entropy CHUNK_MAX) and the planner's switch seeding, then the
# exhaustive tables of every L1 task for search efficiency (benchmarks/exhaustive.py, precompiled on the
# host's cores into one shared Triton cache outside $OUT). Small spaces first; col_reduce (606) last.
# Copy results/exhaustive.tgz's files to benchmarks/results/exhaustive/, kernels.* to the suite folder.
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"; cp benchmarks/results/h200/suite/kernels.json "$R/kernels.json"
timeout 200 python3 benchmarks/run_suite.py --append --skip-compile --tasks l1_col_reduce,l1_cross_entropy \
    --budget-s 150 --baselines "$R/baselines_run16.json" --out-json "$R/kernels.json" --out-md "$R/kernels.md" \
    > "$OUT/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^\[|wrote|spent|Traceback" "$OUT/suite.log"
grep -E "^\| l1_(col_reduce|cross_entropy)" "$R/kernels.md"
mkdir -p /tmp/exh
timeout 370 python3 benchmarks/exhaustive.py --budget-s 330 --out-dir /tmp/exh --triton-cache /tmp/kp-triton \
    --tasks l1_vector_add,l1_relu,l1_gelu,l1_rms_norm,l1_layer_norm,l1_row_softmax,l1_transpose_cuda,l1_cross_entropy,l1_col_reduce \
    > "$OUT/exhaustive.log" 2>&1; echo "exhaustive rc=$?"; grep -v "^\s*$" "$OUT/exhaustive.log" | tail -30
tar -czf "$R/exhaustive.tgz" -C /tmp/exh --exclude=.triton-cache .
rm -rf "$OUT/fx"
