#!/usr/bin/env bash
# H200 run 27 (device tool), run on 2026-12-01 (sixth session): torch.compile(max-autotune) of
# l4_jagged_attention alone, with the session's last ~450 s. Run 25 gave it 170 s and it timed out after
# 165 s: its eager graph launches one attention per sequence (32 lengths), so the compile sees many
# shapes. Here it timed out again, after 430 s. Merge the file with
# benchmarks/merge_baselines.py --suite benchmarks/results/h200/suite/kernels.json --baselines F.
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"
timeout 455 python3 benchmarks/baselines.py --names compile --budget-s 440 --task-timeout-s 430 \
    --tasks l4_jagged_attention \
    --out "$R/baselines_run27_l4_jagged_attention.json" > "$OUT/run27.log" 2>&1; echo "rc=$?"
grep -E "^baselines|wrote|Traceback|timed out" "$OUT/run27.log"
rm -rf "$OUT/fx"
