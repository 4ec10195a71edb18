#!/usr/bin/env bash
# H200 run 1 (device tool): the gpu-marked tool and telemetry tests, bench noise, SDK overhead and the
# telemetry trace capture. Every step is time-boxed so the whole run ends inside the 10-minute limit.
# Outputs: $OUT/env.txt, $OUT/*.log, $OUT/fx.tgz (fixtures the tests saved under $KPILOT_FIXTURE_OUT).
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
timeout 250 python3 -m pytest -m gpu tests/toolrunner tests/telemetry -q -rfE -p no:cacheprovider \
    > "$OUT/gpu_tests.log" 2>&1; echo "gpu tests rc=$?"
timeout 100 python3 -m pytest -m gpu benchmarks/probes/compare_mem_access_ncu.py -q -s -p no:cacheprovider \
    > "$OUT/mem_access_ncu.log" 2>&1; echo "mem access vs ncu rc=$?"
timeout 90 python3 benchmarks/bench_tool_noise.py --runs 6 --out "$OUT/fx/bench_tool_noise.json" \
    > "$OUT/noise.log" 2>&1; echo "noise rc=$?"
[ -n "${WITH_SDK:-}" ] && timeout 45 python3 benchmarks/bench_sdk_overhead.py --out "$OUT/fx/sdk_overhead.json" \
    > "$OUT/sdk.log" 2>&1; echo "sdk rc=$?"
timeout 130 python3 examples/traces/capture_trace.py --phase-s 35 --out "$OUT/fx/h200_poor_matmul_lowbw.jsonl" \
    > "$OUT/trace.log" 2>&1; echo "trace rc=$?"
tar czf "$OUT/fx.tgz" -C "$OUT" fx && rm -rf "$OUT/fx"
tail -5 "$OUT"/gpu_tests.log
