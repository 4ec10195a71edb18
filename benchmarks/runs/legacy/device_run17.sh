#!/usr/bin/env bash
# H200 run 17 (device tool): finish l1_col_reduce's exhaustive table (run 16 timed 96 of 606 before its
# budget; the committed file is resumed), then torch.compile(mode="max-autotune") of every suite task with
# its inputs marked static (run 14's figures include max-autotune's per-call input copy) and with the
# sandbox keeping workers that logged a handled OOM (run 14 lost the five GEMMs that way).
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"; cp benchmarks/results/exhaustive/l1_col_reduce.json "$R/"
timeout 150 python3 benchmarks/exhaustive.py --budget-s 120 --out-dir "$R" --triton-cache /tmp/kp-triton \
    --tasks l1_col_reduce > "$OUT/exhaustive.log" 2>&1; echo "exhaustive rc=$?"; tail -2 "$OUT/exhaustive.log"
timeout 420 python3 benchmarks/baselines.py --names compile --budget-s 380 --out "$R/baselines_run17.json" \
    > "$OUT/baselines.log" 2>&1; echo "baselines rc=$?"; tail -2 "$OUT/baselines.log"
python3 - "$R/baselines_run17.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("wall_s", round(d.get("wall_s", 0), 1))
for t in d["tasks"]:
    b = t.get("baselines", {}).get("compile", {})
    print(t["task"], t.get("not_measured", "")[:90], b.get("median_ms"), b.get("compile_s"), (b.get("error") or "")[:80])
PY
rm -rf "$OUT/fx"
