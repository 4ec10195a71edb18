# Sourced at the start of every H200 run (device tool): installs the carried wheels (.whl/, made with
# `pip download --python-version 3.12 ...`, see README "GPU runs") into /tmp/site and records versions.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
mkdir -p "$OUT/fx"
export KPILOT_FIXTURE_OUT=$OUT/fx
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; python3 -c "import torch, triton; \
print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"; \
  which ncu compute-sanitizer; } > "$OUT/env.txt" 2>&1
