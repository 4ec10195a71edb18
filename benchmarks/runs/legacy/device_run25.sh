#!/usr/bin/env bash
# H200 run 25 (device tool), run on 2026-12-01 (sixth session): torch.compile(max-autotune) of
# the three L4 tasks, one baselines.py call each so that each gets its own ~180 s (run 19 gave
# block-sparse 59 s and run 21 gave jagged 105 s; both timed out, MoE was never reached). Merge each file
# with benchmarks/merge_baselines.py --suite benchmarks/results/h200/suite/kernels.json --baselines F.
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"
for t in l4_moe_grouped_gemm l4_block_sparse_attention l4_jagged_attention; do
  timeout 185 python3 benchmarks/baselines.py --names compile --budget-s 170 --tasks "$t" \
      --out "$R/baselines_run25_$t.json" >> "$OUT/run25.log" 2>&1; echo "$t rc=$?"
done
grep -E "^baselines|wrote|Traceback" "$OUT/run25.log"
rm -rf "$OUT/fx"
