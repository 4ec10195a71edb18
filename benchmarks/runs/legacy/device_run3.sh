#!/usr/bin/env bash
# H200 run 3 (device tool): the closed loop on the matmul example after the micro-timing fix (CUDA-graph
# replay for the micro stability check), then the bench noise benchmark again. Outputs under $OUT.
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
K="python3 -m services.kpilot"
S=/tmp/kpstate
$K up --detach --port 4222 --state-dir $S --timeout 180 > "$OUT/up.log" 2>&1 || { cat "$OUT/up.log"; exit 4; }
$K register examples/matmul.py >> "$OUT/up.log" 2>&1
t0=$(date +%s)
timeout 300 $K optimize examples/matmul.py --budget 270 --json > "$OUT/optimize_matmul.json" 2> "$OUT/optimize.err"
echo "matmul rc=$? in $(( $(date +%s) - t0 )) s"
$K tail 'patches.>' 'verdicts.>' 'candidates.>' 'jobs.>' --json --since 1h --timeout 4 > "$OUT/stream.jsonl" 2>/dev/null
$K down --port 4222 --state-dir $S > /dev/null 2>&1
tar czf "$OUT/logs.tgz" -C $S logs 2>/dev/null
timeout 75 python3 benchmarks/bench_tool_noise.py --runs 4 --out "$OUT/fx/bench_tool_noise.json" > "$OUT/noise.log" 2>&1
echo "noise rc=$?"; tail -2 "$OUT/noise.log"
tar czf "$OUT/fx.tgz" -C "$OUT" fx && rm -rf "$OUT/fx"
grep -c verified "$OUT/stream.jsonl"
