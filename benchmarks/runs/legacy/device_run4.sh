#!/usr/bin/env bash
# H200 run 4 (device tool): the kernel suite's L1 and L2 tasks (benchmarks/run_suite.py, rules search timed
# by the autotune tool, correctness on the GPU, bench_ab start vs best, baselines and roofline measured in
# the same run). A one-task smoke run goes first and the run stops when it yields no speedup, so a broken
# pipeline costs ~1 minute, not ten. torch.compile(max-autotune) is left out (minutes per GEMM task).
# Outputs under $OUT/results: kernels.json/.md (rows appended task by task), baselines_*.json, logs.
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"
S="python3 benchmarks/run_suite.py --skip-compile --out-json $R/kernels.json --out-md $R/kernels.md"
t0=$(date +%s)
timeout 110 $S --tasks l1_vector_add --budget-s 90 --baselines "$R/baselines_smoke.json" \
    > "$OUT/suite_smoke.log" 2>&1; echo "smoke rc=$? in $(( $(date +%s) - t0 )) s"
python3 - "$R/kernels.json" <<'PY' || { tail -30 "$OUT/suite_smoke.log"; exit 5; }
import json, sys
r = json.load(open(sys.argv[1]))["rows"][0]
print(r["task"], "speedup", r["speedup"], "correct", r["correct"], r["not_measured"], r["notes"], "wall", r["wall_s"])
sys.exit(0 if r["speedup"] else 1)
PY
REST=l1_relu,l1_gelu,l1_row_softmax,l1_layer_norm,l1_rms_norm,l1_col_reduce,l1_cross_entropy,l1_transpose_cuda
REST=$REST,l2_matmul_square,l2_matmul_tall_skinny,l2_matmul_irregular,l2_bmm,l2_matmul_bias_gelu
left=$(( 560 - ($(date +%s) - t0) ))
timeout $(( left + 15 )) $S --append --tasks $REST --budget-s $(( left - 20 )) --baselines "$R/baselines_l1l2.json" \
    > "$OUT/suite.log" 2>&1; echo "suite rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "^\[|wrote|Error|Traceback" "$OUT/suite.log" | tail -20
cat "$R/kernels.md"
