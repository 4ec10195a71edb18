#!/usr/bin/env bash
# H200 run 22 (device tool), the session's last ~320 s: the exhaustive tables of l2_matmul_tall_skinny and
# then l2_matmul_square. Both tasks have the same kernel source and full shapes divisible by 16, so Triton
# specializes them alike and square's precompile finds tall-skinny's binaries in the shared cache.
# l2_matmul_bias_gelu does not fit (run 21 reached bmm and irregular; tall-skinny's budget ran out there).
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"
cp benchmarks/results/exhaustive/l2_*.json "$R/" 2>/dev/null
timeout 265 python3 benchmarks/exhaustive.py --budget-s 225 --out-dir "$R" --triton-cache /tmp/kp-triton \
    --tasks l2_matmul_tall_skinny,l2_matmul_square > "$OUT/run22.log" 2>&1; echo "exhaustive rc=$?"
grep -E "timed, complete|precompiled|Traceback|Error" "$OUT/run22.log" | tail -6
rm -f "$R/l2_bmm.json" "$R/l2_matmul_irregular.json"; rm -rf "$OUT/fx"
