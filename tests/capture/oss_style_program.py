"""An unmodified program calling a library-style kernel (tests/capture/oss_style_kernels.py) twice."""

import torch

from tests.capture.oss_style_kernels import norm_gate

torch.manual_seed(0)
x, weight = torch.randn(6, 80), torch.randn(80)
for _ in range(2):
    y = norm_gate(x, weight)
z = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight
assert torch.allclose(y, z * torch.sigmoid(z), atol=1e-5), "norm_gate differs from torch"
print("ok")
