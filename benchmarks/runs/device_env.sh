# Sourced by a run file's step scripts on the H200 (benchmarks/ledger.py runs them): the carried wheels
# (.whl/, made with `pip download --python-version 3.12 ...`, README "What needs a GPU") in /tmp/site, the
# step's output folder as $OUT, the fixture folder, and the versions next to the results.
export OUT=${STEP_OUT:-$OUT}
if ! python3 -c "import msgspec, nats" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
      .whl/*.whl || return 1
fi
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
mkdir -p "$OUT/fx"
export KPILOT_FIXTURE_OUT=$OUT/fx
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; python3 -c "import torch, triton; \
print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"; \
  which ncu compute-sanitizer; } > "$OUT/env.txt" 2>&1
