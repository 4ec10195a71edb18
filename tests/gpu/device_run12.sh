#!/usr/bin/env bash
# H200 run 12 (device tool), prepared for the next GPU window: search efficiency for two L1 tasks.
#  1. benchmarks/exhaustive.py times every legal config of l1_vector_add (96) and l1_relu (102) once on
#     the full shape (resumable: an interrupted task says complete: false);
#  2. benchmarks/search_report.py: evaluations the planner's search needed to reach 98 % of that optimum,
#     from the committed suite rows (benchmarks/results/h200/suite/kernels.json).
# Copy $OUT/results/exhaustive/*.json to benchmarks/results/exhaustive/ and search_eff.* next to the suite.
set -u
source tests/gpu/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R/exhaustive"
timeout 480 python3 benchmarks/exhaustive.py --tasks l1_vector_add,l1_relu --budget-s 440 \
    --out-dir "$R/exhaustive" > "$OUT/exhaustive.log" 2>&1; echo "exhaustive rc=$?"; tail -4 "$OUT/exhaustive.log"
timeout 60 python3 benchmarks/search_report.py --suite benchmarks/results/h200/suite/kernels.json \
    --exhaustive-dir "$R/exhaustive" --out "$R/search_eff" > "$OUT/search_report.log" 2>&1
echo "search_report rc=$?"; cat "$R/search_eff.md" 2>/dev/null | head -12
rm -rf "$OUT/fx"
