#!/usr/bin/env bash
# H200 run 24 (device tool), run on 2026-12-01 (sixth session): the last L2 exhaustive table,
# l2_matmul_bias_gelu (340 configs). Run 23 precompiled 97 of them in 88.5 s and timed none, so this
# needs ~310 s of precompile and ~60 s of timing. Resumable: a table cut short says complete: false and a
# rerun continues it. Copy l2_matmul_bias_gelu.json to benchmarks/results/exhaustive/, then run
# `make bench-search-eff` and `make bench-search-replay` and update the READMEs and
# tests/benchmarks/test_search_eff_h200.py (it expects this table missing).
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"
cp benchmarks/results/exhaustive/l2_matmul_bias_gelu.json "$R/" 2>/dev/null
timeout 585 python3 benchmarks/exhaustive.py --budget-s 540 --out-dir "$R" --triton-cache /tmp/kp-triton \
    --tasks l2_matmul_bias_gelu > "$OUT/run24.log" 2>&1; echo "exhaustive rc=$?"
grep -E "timed, complete|precompiled|Traceback" "$OUT/run24.log" | tail -4
rm -rf "$OUT/fx"
