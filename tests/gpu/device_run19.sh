#!/usr/bin/env bash
# H200 run 19 (device tool), prepared for the next GPU window, not run yet. Three steps, each resumable or
# appended, in order of what issue #8 still lacks:
#  1. torch.compile(max-autotune) of the five tasks runs 17-18 did not reach (merge afterwards with
#     benchmarks/merge_baselines.py --baselines benchmarks/results/h200/suite/baselines_run19.json);
#  2. the first L2 exhaustive table, l2_bmm (1,204 configs), resumed from benchmarks/results/exhaustive/
#     when a partial file is there; its precompile and timing cost per GEMM config is the first figure it
#     gives;
#  3. the suite rows of gelu and transpose_cuda again (round 0 only before; the search now has switch
#     seeding and the pattern move), appended to a copy of the committed kernels.json; their new rows
#     need baselines_run17.json merged again for the compile column.
# At most 8 files come back: the logs are joined into one, the suite's own baselines file is left out.
# Copy l2_bmm.json to benchmarks/results/exhaustive/.
set -u
source tests/gpu/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"; cp benchmarks/results/h200/suite/kernels.json "$R/kernels.json"
timeout 200 python3 benchmarks/baselines.py --names compile --budget-s 170 --out "$R/baselines_run19.json" \
    --tasks l3_attention_d128_causal,l3_pipeline,l4_block_sparse_attention,l4_jagged_attention,l4_moe_grouped_gemm \
    > "$OUT/baselines.log" 2>&1; echo "baselines rc=$?"; tail -2 "$OUT/baselines.log"
cp benchmarks/results/exhaustive/l2_bmm.json "$R/" 2>/dev/null
timeout 220 python3 benchmarks/exhaustive.py --budget-s 190 --out-dir "$R" --triton-cache /tmp/kp-triton \
    --tasks l2_bmm > "$OUT/exhaustive.log" 2>&1; echo "exhaustive rc=$?"; tail -3 "$OUT/exhaustive.log"
timeout 150 python3 benchmarks/run_suite.py --append --skip-compile --tasks l1_gelu,l1_transpose_cuda \
    --budget-s 110 --baselines "$R/baselines_run19_suite.json" --out-json "$R/kernels.json" \
    --out-md "$R/kernels.md" > "$OUT/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^\[|wrote|Traceback" "$OUT/suite.log"
cat "$OUT/baselines.log" "$OUT/exhaustive.log" "$OUT/suite.log" > "$OUT/run19.log"
rm -rf "$OUT/fx" "$OUT/baselines.log" "$OUT/exhaustive.log" "$OUT/suite.log" "$R/baselines_run19_suite.json"
