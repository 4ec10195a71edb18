#!/usr/bin/env bash
# Issue 21 on the H200: bring your own kernel. `kpilot capture` runs an unmodified plain Triton program
# (benchmarks/capture/program.py: rms_norm / swiglu / autotuned add_relu / softmax kernels written in the
# style of unsloth, FlagGems and attorch; those packages are NOT on the device, so these are not their code)
# and writes a task per hot kernel ranked by GPU time from CUDA events; then
#  1. `kpilot verify` (static -> micro -> full funnel, on the GPU) of the top 2 captured tasks at their
#     captured config: the task compiles for cuda:90, passes correctness against the frozen reference;
#  2. `kpilot optimize` on the hottest captured task on a stack (`kpilot up`), budget 80 s.
# Outputs under $OUT: capture/ (capture.json, the task files, raw/), capture.log, verify_<kernel>.json,
# optimize.json/.err, i21_capture.json (summary: per kernel share, gpu ms, calls, task, verify layers,
# the optimize outcome). Typically <= 5 min; the hard timeouts sum to ~6 min.
set -u
source benchmarks/runs/device_env.sh || exit 3
t0=$(date +%s)
K="python3 -m services.kpilot"
timeout 90 $K capture --out "$OUT/capture" --top 3 -- python3 benchmarks/capture/program.py > "$OUT/capture.log" 2>&1
echo "capture rc=$? in $(( $(date +%s) - t0 )) s"; cat "$OUT/capture.log"
TASKS=$(python3 -c "import json,sys; r=json.load(open('$OUT/capture/capture.json')); print(' '.join(k['task'] for k in r['kernels'] if k['task']))")
n=0
for t in $TASKS; do
  n=$((n+1)); [ $n -gt 2 ] && break
  name=$(basename "$t" .py)
  timeout 75 $K verify "$t" --json > "$OUT/verify_$name.json" 2> "$OUT/verify_$name.err"
  echo "verify $name rc=$? at $(( $(date +%s) - t0 )) s"
done
TOP=$(echo $TASKS | cut -d' ' -f1)
if [ -n "$TOP" ]; then
  S=$(mktemp -d)/state
  KPILOT_TASK_ROOTS="$OUT/capture" $K up --detach --port 4222 --state-dir $S --timeout 120 > "$OUT/up.log" 2>&1 \
    && { KPILOT_TASK_ROOTS="$OUT/capture" timeout 110 $K optimize "$TOP" --budget 80 --json \
           > "$OUT/optimize.json" 2> "$OUT/optimize.err"; echo "optimize rc=$? at $(( $(date +%s) - t0 )) s"; } \
    || { echo "kpilot up failed"; tail -5 "$OUT/up.log"; }
  $K down --port 4222 --state-dir $S > /dev/null 2>&1
fi
python3 - <<'PY'
import json, os
from pathlib import Path
out = Path(os.environ["OUT"])
rep = json.loads((out / "capture" / "capture.json").read_text())
summary = {"timing": rep["timing"], "kernels": []}
for k in rep["kernels"]:
    row = {x: k[x] for x in ("kernel", "origin", "calls", "share", "share_of", "gpu_ms", "task", "problems")}
    v = out / f"verify_{Path(k['task']).stem}.json" if k["task"] else None
    if v and v.is_file() and v.read_text().strip():
        try:
            row["verify"] = [{x: d.get(x) for x in ("layer", "status", "reasons")} for d in json.loads(v.read_text())]
        except json.JSONDecodeError:
            row["verify"] = "not JSON: " + v.read_text()[-500:]
    summary["kernels"].append(row)
opt = out / "optimize.json"
summary["optimize"] = opt.read_text()[-4000:] if opt.is_file() else "not run"
(out / "i21_capture.json").write_text(json.dumps(summary, indent=1))
print(json.dumps(summary, indent=1)[:6000])
PY
echo "done in $(( $(date +%s) - t0 )) s"
