#!/usr/bin/env bash
# H200 run 13 (device tool), prepared for the next GPU window: the suite rows whose search the launch_grid
# tool changes (l2_bmm, l1_col_reduce: round 0 from the tasks' real program counts), with the
# torch.compile(max-autotune) baselines this time for the L1 tasks among them (minutes for a GEMM, so
# l2_bmm keeps --skip-compile in its own call). Appended to a copy of the committed kernels.json.
set -u
source tests/gpu/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"; cp benchmarks/results/h200/suite/kernels.json "$R/kernels.json"
timeout 300 python3 benchmarks/run_suite.py --append --tasks l1_col_reduce,l1_gelu --budget-s 260 \
    --baselines "$R/baselines_run13_l1.json" --out-json "$R/kernels.json" --out-md "$R/kernels.md" \
    > "$OUT/suite_l1.log" 2>&1; echo "suite L1 rc=$?"; grep -E "^\[|wrote|spent|Traceback" "$OUT/suite_l1.log"
timeout 240 python3 benchmarks/run_suite.py --append --skip-compile --tasks l2_bmm --budget-s 200 \
    --baselines "$R/baselines_run13_bmm.json" --out-json "$R/kernels.json" --out-md "$R/kernels.md" \
    > "$OUT/suite_bmm.log" 2>&1; echo "suite bmm rc=$?"; grep -E "^\[|wrote|spent|Traceback" "$OUT/suite_bmm.log"
rm -rf "$OUT/fx"
