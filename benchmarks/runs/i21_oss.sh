#!/usr/bin/env bash
# Issue 21 on the GPU: capture a real program that calls kernels of two open-source Triton projects,
# liger-kernel 0.8.5 and fla-core 0.6.0 (wheels carried in .whl-oss/, `make wheels-oss`), and optimize the
# captured hot kernels. benchmarks/capture/oss_program.py (no kernelpilot import) runs a transformer-style
# block forward at SHAPES; `kpilot capture --top 4` ranks its kernels by GPU time from CUDA events and
# writes a task per kernel; then
#  1. `kpilot verify --json` of the top 2 captured tasks at their captured config (static -> micro -> full);
#  2. `kpilot up`, then `kpilot optimize --json` on each of the hottest 2 tasks (rules policy);
#  3. benchmarks/capture/oss_summary.py: OUT/i21_oss.json, one row per kernel (original vs patched medians,
#     speedup CI, time to the verified patch, changes and diff, torch.compile of its torch expression).
# Env: SHAPES="TOKENS HIDDEN FFN DTYPE STEPS" (default GPU shapes), VERIFY_S, OPT_BUDGET, OPT_S, CAPTURE_S,
# PICK="1 2" (the captured ranks to verify and optimize, hottest = 1) or KERNELS="name ..." (by kernel name:
# the ranks move between runs when two kernels take about the same share).
# Hard timeouts sum to ~420 s at the defaults (capture 75, verify 2x45, up ~30, optimize 2x95, summary ~40).
set -u
source benchmarks/runs/device_env.sh || exit 3
t0=$(date +%s)
SHAPES=${SHAPES:-"4096 4096 11008 float16 5"}
K="python3 -m services.kpilot"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/oss-site \
  .whl-oss/*.whl > "$OUT/pip_oss.log" 2>&1 || { echo "installing .whl-oss failed"; cat "$OUT/pip_oss.log"; exit 3; }
export PYTHONPATH=/tmp/oss-site:$PYTHONPATH  # the program imports them; captured tasks do not (self-contained)
timeout ${CAPTURE_S:-75} $K capture --out "$OUT/capture" --top 4 -- python3 benchmarks/capture/oss_program.py $SHAPES \
  > "$OUT/capture.log" 2>&1
echo "capture rc=$? in $(( $(date +%s) - t0 )) s"; tail -8 "$OUT/capture.log"
TASKS=$(python3 -c "import json; r=json.load(open('$OUT/capture/capture.json')); print(' '.join(k['task'] for k in r['kernels'] if k['task']))" 2>/dev/null)
[ -n "$TASKS" ] || { echo "no captured task"; exit 1; }
if [ -n "${KERNELS:-}" ]; then
  PICKED=$(python3 -c "import json,sys; r=json.load(open('$OUT/capture/capture.json')); print(' '.join(k['task'] for k in r['kernels'] if k['task'] and k['kernel'] in sys.argv[1:]))" $KERNELS)
else
  PICKED=$(for r in ${PICK:-1 2}; do echo $TASKS | cut -d' ' -f$r; done)
fi
[ -n "$PICKED" ] || { echo "none of the captured tasks is picked (PICK=${PICK:-1 2} KERNELS=${KERNELS:-})"; exit 1; }
for t in $PICKED; do
  name=$(basename "$t" .py)
  timeout ${VERIFY_S:-45} $K verify "$t" --json > "$OUT/verify_$name.json" 2> "$OUT/verify_$name.err"
  echo "verify $name rc=$? at $(( $(date +%s) - t0 )) s"
done
S=$(mktemp -d)/state
if KPILOT_TASK_ROOTS="$OUT/capture" $K up --detach --port 4222 --state-dir $S --timeout 120 > "$OUT/up.log" 2>&1; then
  echo "up at $(( $(date +%s) - t0 )) s"
  for t in $PICKED; do
    name=$(basename "$t" .py)
    KPILOT_TASK_ROOTS="$OUT/capture" timeout ${OPT_S:-95} $K optimize "$t" --budget ${OPT_BUDGET:-75} \
      --patch-wait 10 --json --nats nats://127.0.0.1:4222 > "$OUT/optimize_$name.json" 2> "$OUT/optimize_$name.err"
    echo "optimize $name rc=$? at $(( $(date +%s) - t0 )) s"
  done
else
  echo "kpilot up failed"; tail -5 "$OUT/up.log"
fi
$K down --port 4222 --state-dir $S > /dev/null 2>&1
tar czf "$OUT/stack_logs.tgz" -C "$S" logs 2>/dev/null
timeout 60 python3 benchmarks/capture/oss_summary.py "$OUT" $(echo $SHAPES | cut -d' ' -f1-4) 2> "$OUT/summary.err"
echo "summary rc=$?; done in $(( $(date +%s) - t0 )) s"
