#!/usr/bin/env bash
# H200 run 2 (device tool): the closed loop for real. The embedded stack (nats-server from the carried
# wheel, all six services) comes up on the GPU machine; `kpilot optimize` runs the rules policy on the
# example tasks; the verifier times candidates with bench_ab on the GPU; the critic publishes patches.
# Then the verifier's gpu-marked cheat tests. Outputs under $OUT (JSON lines of every patch and verdict).
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
K="python3 -m services.kpilot"
S=/tmp/kpstate
$K up --detach --port 4222 --state-dir $S --timeout 180 > "$OUT/up.log" 2>&1 || { cat "$OUT/up.log"; exit 4; }
$K register examples/matmul.py examples/vector_add.py examples/row_softmax.py >> "$OUT/up.log" 2>&1
$K status >> "$OUT/up.log" 2>&1
t0=$(date +%s)
timeout 250 $K optimize examples/matmul.py --budget 200 --json > "$OUT/optimize_matmul.json" 2> "$OUT/optimize.err"
echo "matmul rc=$? in $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 130 $K optimize examples/vector_add.py --budget 100 --json > "$OUT/optimize_vector_add.json" 2>> "$OUT/optimize.err"
echo "vector_add rc=$? in $(( $(date +%s) - t0 )) s"
$K tail 'patches.>' 'verdicts.>' 'candidates.>' 'jobs.>' --json --since 1h --timeout 5 > "$OUT/stream.jsonl" 2>/dev/null
$K down --port 4222 --state-dir $S > /dev/null 2>&1
tar czf "$OUT/logs.tgz" -C $S logs 2>/dev/null
timeout 120 python3 -m pytest -m gpu tests/verifier -q -rfE -p no:cacheprovider > "$OUT/verifier_gpu.log" 2>&1
echo "verifier gpu tests rc=$?"; tail -3 "$OUT/verifier_gpu.log"
tar czf "$OUT/fx.tgz" -C "$OUT" fx && rm -rf "$OUT/fx"
grep -c . "$OUT/stream.jsonl"
