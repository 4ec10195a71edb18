#!/usr/bin/env bash
# H200 run 6 (device tool): the verifier's gpu-marked cheat tests, the live main job (the stack, the
# example workload in its untuned configs under the launch SDK, real NVML samples -> detectors -> planner
# -> funnel on the GPU -> critic), then bench_verifier with what is left. Outputs under $OUT.
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
t0=$(date +%s)
timeout 185 python3 -m pytest tests/verifier/test_cheats.py -m gpu -q -rfE -p no:cacheprovider --durations=0 \
    > "$OUT/verifier_gpu.log" 2>&1; echo "verifier gpu tests rc=$? in $(( $(date +%s) - t0 )) s"
tail -15 "$OUT/verifier_gpu.log"
K="python3 -m services.kpilot"; ST=/tmp/kpstate; URL=nats://127.0.0.1:4222
$K up --detach --port 4222 --state-dir $ST --timeout 120 > "$OUT/up.log" 2>&1 || { tail -20 "$OUT/up.log"; }
timeout 215 python3 -m services.kpilot.demo --live --live-s 45 --timeout 190 --nats $URL > "$OUT/demo_live.txt" 2>&1
echo "live demo rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "VERIFIED|rejected|event|did not" "$OUT/demo_live.txt" | head -12
$K tail 'events.>' 'jobs.>' 'candidates.>' 'verdicts.>' 'patches.>' --json --since 1h --timeout 4 --nats $URL \
    > "$OUT/live_streams.jsonl" 2>/dev/null
$K down --port 4222 --state-dir $ST > /dev/null 2>&1
tar czf "$OUT/live_logs.tgz" -C $ST logs 2>/dev/null
left=$(( 530 - ($(date +%s) - t0) ))
[ $left -gt 40 ] && timeout $left python3 benchmarks/bench_verifier.py --repeats 2 --budget-s $(( left - 35 )) \
    --out "$OUT/bench_verifier.json" > "$OUT/bench_verifier.log" 2>&1; echo "bench_verifier rc=$? left=$left"
tail -3 "$OUT/bench_verifier.log"
tar czf "$OUT/fx.tgz" -C "$OUT" fx && rm -rf "$OUT/fx"
