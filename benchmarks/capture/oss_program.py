"""A plain program that calls real kernels of two open-source Triton projects (issue 21's evidence).

It knows nothing of kernelpilot: it imports liger-kernel (linkedin/Liger-Kernel, 0.8.5) and fla-core
(fla-org/flash-linear-attention's kernels, 0.6.0) as installed packages and runs a few steps of a small
transformer-style block forward, each step launching their kernels through their public entry points:

  liger  LigerRMSNormFunction   -> _rms_norm_forward_kernel   (block size and num_warps from the row width)
  liger  LigerSiLUMulFunction   -> _swiglu_forward_kernel     (n_cols a constexpr)
  fla    layer_norm_fwd         -> layer_norm_fwd_kernel[_row] (@triton.autotune, optional pointers)
  fla    l2norm_fwd             -> l2norm_fwd_kernel[_row]    (@triton.autotune / fla_cache_autotune)

Shapes: `oss_program.py [TOKENS HIDDEN FFN [DTYPE [STEPS]]]` (defaults: the GPU shapes 4096 4096 11008
float16 10). On CPU run it under TRITON_INTERPRET=1 at tiny shapes, e.g. `8 64 96 float32 2`; the
interpreter has no bfloat16. Torch does the matmuls; every norm/activation is a Triton kernel of the two
projects. It prints one line per step and `ok` after checking the last step against a torch expression.
"""

from __future__ import annotations

import sys

import torch
from fla.modules.norm.l2norm import l2norm_fwd
from fla.modules.norm.layernorm import layer_norm_fwd
from liger_kernel.ops.rms_norm import LigerRMSNormFunction
from liger_kernel.ops.swiglu import LigerSiLUMulFunction


def block(x: torch.Tensor, p: dict[str, torch.Tensor]) -> torch.Tensor:
    h = LigerRMSNormFunction.apply(x, p["norm1"], 1e-6, 0.0, "llama", False)
    q = l2norm_fwd(h @ p["wq"])[0]  # qk-norm, as linear-attention layers do
    x = x + q @ p["wo"]
    h = layer_norm_fwd(x, p["ln_w"], p["ln_b"], 1e-5)[0]
    u = LigerSiLUMulFunction.apply(h @ p["wg"], h @ p["wu"])
    return x + u @ p["wd"]


def rms_norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:  # liger's "llama" casting
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def l2norm(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.normalize(x.float(), dim=-1, eps=1e-6).to(x.dtype)


def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), w.float(), b.float(), 1e-5).to(x.dtype)


def silu_mul(g: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    gf = g.float()
    return (gf * torch.sigmoid(gf)).to(g.dtype) * u


def torch_block(x: torch.Tensor, p: dict[str, torch.Tensor]) -> torch.Tensor:
    h = rms_norm(x, p["norm1"])
    x = x + l2norm(h @ p["wq"]) @ p["wo"]
    h = layer_norm(x, p["ln_w"], p["ln_b"])
    return x + silu_mul(h @ p["wg"], h @ p["wu"]) @ p["wd"]


# The torch expression each kernel of the block computes, with the shapes of its inputs (a multiple of
# tokens, hidden, ffn): what benchmarks/capture/oss_summary.py times under torch.compile beside the kernel.
TORCH_EQUIVALENTS = {
    "_rms_norm_forward_kernel": (rms_norm, (("t", "h"), ("h",))),
    "l2norm_fwd_kernel": (l2norm, (("t", "h"),)),
    "l2norm_fwd_kernel_row": (l2norm, (("t", "h"),)),
    "layer_norm_fwd_kernel": (layer_norm, (("t", "h"), ("h",), ("h",))),
    "layer_norm_fwd_kernel_row": (layer_norm, (("t", "h"), ("h",), ("h",))),
    "_swiglu_forward_kernel": (silu_mul, (("t", "f"), ("t", "f"))),
}


def main(argv: list[str]) -> None:
    tokens, hidden, ffn = (int(a) for a in (argv[1:4] if len(argv) > 3 else (4096, 4096, 11008)))
    dtype = getattr(torch, argv[4] if len(argv) > 4 else "float16")
    steps = int(argv[5]) if len(argv) > 5 else 10
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    scale = hidden ** -0.5

    def w(*shape: int, s: float = scale) -> torch.Tensor:
        return (torch.randn(*shape, device=device) * s).to(dtype)

    p = {"norm1": 1 + w(hidden, s=0.1), "wq": w(hidden, hidden), "wo": w(hidden, hidden),
         "ln_w": 1 + w(hidden, s=0.1), "ln_b": w(hidden, s=0.1), "wg": w(hidden, ffn), "wu": w(hidden, ffn),
         "wd": w(ffn, hidden, s=ffn ** -0.5)}
    x = w(tokens, hidden, s=1.0)
    with torch.no_grad():
        for step in range(steps):
            y = block(x, p)
            print(f"step {step}: |y| = {y.float().norm():.4g}", flush=True)
        ref = torch_block(x, p)
    tol = 2e-2 if dtype != torch.float32 else 1e-3
    err = ((y.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
    assert err < tol, f"block differs from its torch expression: relative max error {err:.3g}"
    print("ok")


if __name__ == "__main__":
    main(sys.argv)
