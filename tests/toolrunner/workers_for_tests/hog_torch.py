"""Allocate a 4 GiB torch tensor; under a smaller RLIMIT_AS torch's CPU allocator refuses."""

import torch

blob = torch.empty(1 << 30, dtype=torch.float32)
print(blob.numel())
