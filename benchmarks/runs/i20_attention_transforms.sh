#!/usr/bin/env bash
# Issue 20, attention: split_key_loop (the four l3 attention tasks, at the tiles the suite shipped with the
# hand-written SPLIT_MASK = 1), causal_tile_skip (tests/transforms/tasks/attention_causal_all_keys.py) and
# sparse_block_skip (l4_block_sparse_attention, start and shipped tile) timed on the H200: each task
# against its transformed candidate, interleaved ABBA by the toolrunner's bench_ab, full shape
# (benchmarks/transforms_bench.py --only). Writes $OUT/transforms_attention.json; the JSON is rewritten
# after every row, so a run cut at 500 s keeps what it measured. Off the GPU every row says "not measured".
set -u
OUT=${STEP_OUT:-${OUT:-/tmp/kpilot-out}}; mkdir -p "$OUT"  # the ledger step folder when run from a run file
if [ -d .whl ] && [ -f benchmarks/runs/device_env.sh ]; then
    source benchmarks/runs/device_env.sh || exit 3  # carried wheels (libcst among them) + env.txt
fi
PY=${PYTHON:-python3}
COMMIT=${KPILOT_RUN_COMMIT:-${KPILOT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo "unknown (no .git on the device)")}}
timeout 500 "$PY" benchmarks/transforms_bench.py --out "$OUT/transforms_attention.json" --commit "$COMMIT" \
    --only split_key_loop causal_tile_skip sparse_block_skip > "$OUT/i20_attention_transforms.log" 2>&1
echo "rc=$?"
tail -20 "$OUT/i20_attention_transforms.log"
