#!/usr/bin/env bash
# H200 run 23 (device tool), the session's last ~120 s, run as this one command line: the exhaustive table
# of l2_matmul_bias_gelu. It did not fit: 97 of 340 configs precompiled in 88.5 s, none timed, no table
# written (benchmarks/results/exhaustive/logs/run23_exhaustive.log).
source benchmarks/runs/legacy/device_setup.sh || exit 3; R=$OUT/results; mkdir -p $R; timeout 112 python3 benchmarks/exhaustive.py --budget-s 92 --out-dir $R --triton-cache /tmp/kp-triton --tasks l2_matmul_bias_gelu > $OUT/run23.log 2>&1; echo rc=$?; grep -E "timed, complete|precompiled" $OUT/run23.log; rm -rf $OUT/fx
