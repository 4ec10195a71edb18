#!/usr/bin/env bash
# H200 run 26 (device tool), run on 2026-12-01 (sixth session): the five L3 rows searched past
# round 0 (runs 5-10 gave each ~30 s: round 0 only), appended to a copy of the committed kernels.json.
# The four attention tasks have had the SPLIT_MASK switch since (written on CPU, never timed): the search
# seeds both of its values.
# Merge the compile column afterwards: baselines_run17.json and baselines_run18.json (attention d64 and
# d128, causal d64), baselines_run19.json (causal d128, the pipeline).
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"; cp benchmarks/results/h200/suite/kernels.json "$R/kernels.json"
timeout 585 python3 benchmarks/run_suite.py --append --skip-compile --budget-s 545 \
    --tasks l3_attention_d64,l3_attention_d64_causal,l3_attention_d128,l3_attention_d128_causal,l3_pipeline \
    --baselines "$R/baselines_run26.json" --out-json "$R/kernels.json" --out-md "$R/kernels.md" \
    > "$OUT/run26.log" 2>&1; echo "suite rc=$?"; grep -E "^\[|wrote|Traceback|spent" "$OUT/run26.log"
rm -rf "$OUT/fx"
