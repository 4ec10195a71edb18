#!/usr/bin/env bash
# H200 run 9 (device tool), prepared for the next GPU window: the decomposer's corpus attribution with ncu
# evidence, batched (one launcher process and one ncu run per batch of cases). A 3-case smoke batch checks
# the cudaProfilerStart/Stop ranges split as expected before the whole corpus runs.
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"
timeout 150 python3 benchmarks/bench_decomposer_ncu.py --out "$R/ncu_smoke.json" --case clean_add --case tiny_add \
    --case cuda_clean_saxpy --batch-size 4 --budget-s 120 > "$OUT/ncu_smoke.log" 2>&1; echo "smoke rc=$?"
python3 -c "import json,sys; b=json.load(open(sys.argv[1]))['batches']; print([x['outcome'] for x in b])" \
    "$R/ncu_smoke.json" || exit 5
timeout 420 python3 benchmarks/bench_decomposer_ncu.py --out "$R/bench_decomposer_ncu.json" --budget-s 300 \
    --batch-timeout-s 110 > "$OUT/ncu.log" 2>&1; echo "ncu rc=$?"; tail -4 "$OUT/ncu.log"
rm -rf "$OUT/fx"
