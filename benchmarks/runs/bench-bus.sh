#!/usr/bin/env bash
# H200 host (16 quiet CPU cores; no GPU used): `make bench-bus` side by side with raw nats-py, on one
# nats-server and on a three-server cluster at three replicas. The 2-core development machine is shared by
# ~7 agents and its ratios swing 0.5-1.2 between repetitions; this gives the figures on a quiet host.
# Writes $OUT/bus.json (run id, commit, device inside) and $OUT/bench-bus.log.
set -euo pipefail
source benchmarks/runs/device_env.sh
python3 -c "import prometheus_client, nats, msgspec" || { echo "missing wheels in .whl/" >&2; exit 1; }
python3 benchmarks/bench_bus.py --reps 5 --device "H200 host ($(nproc) CPUs; $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))" \
    --out "$OUT/bus.json" 2>&1 | tee "$OUT/bench-bus.log"
