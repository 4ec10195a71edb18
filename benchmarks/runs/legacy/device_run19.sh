#!/usr/bin/env bash
# H200 run 19 (device tool). Two steps that need none of this session's CPU work, in order of what issue
# #8 still lacks, then the one gpu test that never ran on the GPU:
#  1. torch.compile(max-autotune) of the five tasks runs 17-18 did not reach (merge afterwards with
#     benchmarks/merge_baselines.py --baselines benchmarks/results/h200/suite/baselines_run19.json);
#  2. the suite rows of gelu and transpose_cuda again (round 0 only before; the search now has switch
#     seeding and the pattern move), appended to a copy of the committed kernels.json; their new rows
#     need baselines_run17.json merged again for the compile column;
#  3. tests/benchmarks/test_precompile.py (gpu-marked: 8 configs precompiled, then timed from the cache).
# At most 8 files come back: the logs are joined into one, the suite's own baselines file is left out.
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"; cp benchmarks/results/h200/suite/kernels.json "$R/kernels.json"
timeout 200 python3 benchmarks/baselines.py --names compile --budget-s 170 --out "$R/baselines_run19.json" \
    --tasks l3_attention_d128_causal,l3_pipeline,l4_block_sparse_attention,l4_jagged_attention,l4_moe_grouped_gemm \
    > "$OUT/baselines.log" 2>&1; echo "baselines rc=$?"; tail -2 "$OUT/baselines.log"
timeout 270 python3 benchmarks/run_suite.py --append --skip-compile --tasks l1_gelu,l1_transpose_cuda \
    --budget-s 230 --baselines "$R/baselines_run19_suite.json" --out-json "$R/kernels.json" \
    --out-md "$R/kernels.md" > "$OUT/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^\[|wrote|Traceback" "$OUT/suite.log"
timeout 90 python3 -m pytest -m gpu -q -p no:cacheprovider tests/benchmarks/test_precompile.py > "$OUT/pytest.log" 2>&1
echo "pytest rc=$?"; tail -3 "$OUT/pytest.log"
cat "$OUT/baselines.log" "$OUT/suite.log" "$OUT/pytest.log" > "$OUT/run19.log"
rm -rf "$OUT/fx" "$OUT/baselines.log" "$OUT/suite.log" "$OUT/pytest.log" "$R/baselines_run19_suite.json"
