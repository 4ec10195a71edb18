"""A small plain Triton "model step" for `kpilot capture` on the H200 (benchmarks/runs/i21_capture.sh).

FlagGems, attorch and unsloth are not installed on the device (and it cannot reach a package index), so
these kernels are written here in their styles, not copied from them:
- rms_norm_fwd: unsloth-style row kernel, BLOCK_SIZE = next_power_of_2(n_cols) and num_warps from it
  (unsloth's calculate_settings heuristic, host side);
- swiglu_fwd: unsloth-style elementwise gate, fixed BLOCK_SIZE, grid lambda over n_elements;
- add_relu: FlagGems-style pointwise kernel under @triton.autotune keyed on n_elements;
- softmax_fwd: attorch-style row softmax with the row in one block.
Plain script: no kernelpilot import; `main` calls the wrappers like a training step would.
"""

import torch
import triton
import triton.language as tl


def calculate_settings(n):
    block = triton.next_power_of_2(n)
    num_warps = 4
    if block >= 32768:
        num_warps = 32
    elif block >= 8192:
        num_warps = 16
    elif block >= 2048:
        num_warps = 8
    return block, num_warps


@triton.jit
def rms_norm_fwd(Y, Y_row_stride, X, X_row_stride, W, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X + row * X_row_stride + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0)
    var = tl.sum(x * x, axis=0) / n_cols
    inv = tl.math.rsqrt(var + eps)
    y = (x * inv).to(w.dtype) * w
    tl.store(Y + row * Y_row_stride + cols, y, mask=mask)


@triton.jit
def swiglu_fwd(e, g, h, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    e_row = tl.load(e + offs, mask=mask, other=0).to(tl.float32)
    g_row = tl.load(g + offs, mask=mask, other=0)
    f_row = (e_row * tl.sigmoid(e_row)).to(g_row.dtype)
    tl.store(h + offs, f_row * g_row, mask=mask)


@triton.autotune(
    configs=[triton.Config({"BLOCK_SIZE": b}, num_warps=w) for b, w in ((512, 4), (1024, 4), (2048, 8))],
    key=["n_elements"],
)
@triton.jit
def add_relu(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    v = tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(v, 0.0), mask=mask)


@triton.jit
def softmax_fwd(out_ptr, in_ptr, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + cols, (num / tl.sum(num, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


def rms_norm(x, w, eps=1e-6):
    rows, cols = x.shape
    block, warps = calculate_settings(cols)
    y = torch.empty_like(x)
    rms_norm_fwd[(rows,)](y, y.stride(0), x, x.stride(0), w, cols, eps, BLOCK_SIZE=block, num_warps=warps)
    return y


def swiglu(e, g):
    h = torch.empty_like(e)
    n = e.numel()
    swiglu_fwd[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](e, g, h, n, BLOCK_SIZE=1024)
    return h


def residual_relu(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_relu[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, n)
    return out


def softmax(x):
    rows, cols = x.shape
    y = torch.empty_like(x)
    softmax_fwd[(rows,)](y, x, x.stride(0), cols, BLOCK_SIZE=triton.next_power_of_2(cols))
    return y


def main():
    torch.manual_seed(0)
    dev, dt = "cuda", torch.bfloat16
    tokens, hidden, inter, vocab = 4096, 4096, 11008, 2048
    x = torch.randn(tokens, hidden, device=dev, dtype=dt)
    w = torch.randn(hidden, device=dev, dtype=dt)
    gate = torch.randn(tokens, inter, device=dev, dtype=dt)
    up = torch.randn(tokens, inter, device=dev, dtype=dt)
    logits = torch.randn(tokens, vocab, device=dev, dtype=torch.float32)
    for _ in range(20):
        h = rms_norm(x, w)
        a = swiglu(gate, up)
        r = residual_relu(h, x)
        p = softmax(logits)
    torch.cuda.synchronize()
    ref = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(dt) * w
    print("rms max err", (h.float() - ref.float()).abs().max().item())
    print("swiglu ok", torch.allclose(a.float(), (torch.nn.functional.silu(gate.float()).to(dt) * up).float(),
                                      atol=1e-2, rtol=1e-2))
    print("add_relu ok", torch.equal(r, torch.relu(h + x)), "softmax ok",
          torch.allclose(p, torch.softmax(logits, -1), atol=1e-6))


if __name__ == "__main__":
    main()
