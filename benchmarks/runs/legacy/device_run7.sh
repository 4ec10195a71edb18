#!/usr/bin/env bash
# H200 run 7 (device tool), prepared for the next GPU window: re-measure what changed after runs 4-6.
#  1. the verifier's six gpu-marked tests (cheats + honest candidates) with the robust micro CV, 300 s;
#  2. bench_verifier with what is left of a 240 s share (false-reject rate of honest candidates);
# Outputs under $OUT (verifier_gpu.log, bench_verifier.json, fx.tgz with every verdict).
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
t0=$(date +%s)
timeout 300 python3 -m pytest tests/verifier/test_cheats.py -m gpu -q -rfE -p no:cacheprovider --durations=0 \
    > "$OUT/verifier_gpu.log" 2>&1; echo "verifier gpu tests rc=$? in $(( $(date +%s) - t0 )) s"
tail -15 "$OUT/verifier_gpu.log"
left=$(( 560 - ($(date +%s) - t0) ))
timeout $left python3 benchmarks/bench_verifier.py --repeats 2 --budget-s $(( left - 60 )) \
    --out "$OUT/bench_verifier.json" > "$OUT/bench_verifier.log" 2>&1; echo "bench_verifier rc=$?"
tar czf "$OUT/fx.tgz" -C "$OUT" fx && rm -rf "$OUT/fx"
