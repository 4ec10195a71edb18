#!/usr/bin/env bash
# Issue 17 on the H200: a candidate that launches its work on a side stream and returns at once
# (tests/verifier/cheats/side_stream_fast.py: no delay, so its micro-shape work is done before anyone looks)
# must be rejected at the micro layer by the honesty probe, with a reason naming the side stream; the
# earlier side_stream cheat, uninitialised_output and the honest candidates must keep their verdicts (the
# probe's new full-shape pending-work trial must not false-reject an honest kernel).
#  1. the funnel on those candidates (gpu-marked tests of tests/verifier/test_cheats.py), <= 420 s;
#  2. the honesty_probe tool alone on side_stream_fast and on the honest task, JSON records.
# Outputs under $OUT: verifier_gpu.log, honesty_side_stream_fast.json, honesty_honest.json,
# i17_side_stream.json (per candidate: the last verdict's layer, status and reasons), fx/ (every verdict).
set -u
source benchmarks/runs/device_env.sh || exit 3
t0=$(date +%s)
timeout 420 python3 -m pytest tests/verifier/test_cheats.py -m gpu -q -rfE -p no:cacheprovider --durations=0 \
    -k "side_stream or uninitialised_output or honest" > "$OUT/verifier_gpu.log" 2>&1
echo "verifier gpu tests rc=$? in $(( $(date +%s) - t0 )) s"; tail -15 "$OUT/verifier_gpu.log"
timeout 150 python3 - <<'PY'
import asyncio, json, os
from pathlib import Path
import msgspec
from services.kpilot.local_tools import LocalToolClient

out = Path(os.environ["OUT"])
client = LocalToolClient(source="i17")
for name, cand in (("side_stream_fast", "tests/verifier/cheats/side_stream_fast.py"), ("honest", None)):
    args = {"task_path": "examples/vector_add.py", "device": "cuda"}
    if cand:
        args["candidate_path"] = cand
    res = asyncio.run(client.call("honesty_probe", args))
    (out / f"honesty_{name}.json").write_text(json.dumps(msgspec.to_builtins(res), indent=1))
    found = [(f["kind"], f["detail"]) for f in (res.result or {}).get("findings", [])]
    print(name, "ok" if res.ok else res.error, found)
summary = {}
for f in sorted((out / "fx" / "verifier").glob("*.verdicts.json")):
    last = json.loads(f.read_text())[-1]
    summary[f.name.removesuffix(".verdicts.json")] = {k: last[k] for k in ("layer", "status", "reasons")}
(out / "i17_side_stream.json").write_text(json.dumps(summary, indent=1))
print(json.dumps(summary, indent=1)[:3000])
PY
echo "done in $(( $(date +%s) - t0 )) s"
