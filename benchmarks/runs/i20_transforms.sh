#!/usr/bin/env bash
# Issue 20: every transformation of shared/transforms timed on the H200 on a suite kernel where it
# applies: the task against its transformed candidate, interleaved ABBA by the toolrunner's bench_ab,
# full shape, 100 ms per side (benchmarks/transforms_bench.py). Writes $OUT/transforms.json (copy it to
# benchmarks/results/h200/transforms.json). 18 cases x (2 compiles + ~0.5 s timed per side); the JSON
# is rewritten after every row, so a run cut at 400 s keeps what it measured.
# Off the GPU it still runs and every row says "not measured: no GPU".
set -u
OUT=${OUT:-/tmp/kpilot-out}; mkdir -p "$OUT"
if [ -d .whl ] && [ -f benchmarks/runs/device_env.sh ]; then
    source benchmarks/runs/device_env.sh || exit 3  # carried wheels (libcst among them) + env.txt
fi
PY=${PYTHON:-python3}
COMMIT=${KPILOT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo "unknown (no .git on the device)")}
timeout 400 "$PY" benchmarks/transforms_bench.py --out "$OUT/transforms.json" --commit "$COMMIT" \
    > "$OUT/i20_transforms.log" 2>&1; echo "rc=$?"
cat "$OUT/i20_transforms.log" | tail -20
rm -rf "$OUT/fx"
