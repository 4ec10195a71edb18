#!/usr/bin/env bash
# H200 run 14 (device tool): the library baselines of every suite task at its full shape, this time with
# torch.compile(mode="max-autotune") (never measured before: runs 4-11 passed --skip-compile), plus the
# session's roofline. Not merged into the rows: its compile times include max-autotune's per-call input
# copy and its GEMMs were lost to the sandbox's OOM reading (suite README, run 14); runs 17-18 redid them.
# Tasks run in suite order until --budget-s is spent; the rest say "budget spent before this task".
set -u
source benchmarks/runs/legacy/device_setup.sh || exit 3
R=$OUT/results; mkdir -p "$R"
timeout 570 python3 benchmarks/baselines.py --budget-s 520 --out "$R/baselines_run14.json" \
    > "$OUT/baselines.log" 2>&1; echo "baselines rc=$?"; tail -3 "$OUT/baselines.log"
python3 - "$R/baselines_run14.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("wall_s", round(d.get("wall_s", 0), 1), "roofline", {k: d["roofline"].get(k) for k in ("copy_bytes_per_s", "bf16_flops_per_s")})
for t in d["tasks"]:
    b = t.get("baselines", {})
    print(t["task"], t.get("not_measured", ""), {k: (v.get("median_ms"), v.get("compile_s"), (v.get("error") or "")[:60]) for k, v in b.items()})
PY
rm -rf "$OUT/fx"
