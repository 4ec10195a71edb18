"""Captured by `kpilot capture` from /tmp/oss-site/fla/modules/norm/l2norm.py:21: kernel l2norm_fwd_kernel_row.

5 call(s) of this argument signature were observed. The kernel and its jit helpers are copied
verbatim (decorators replaced by @triton.jit); the reference is a frozen copy of the original (`_ref_*`) at
the captured config. Sizes are fixed by the capture, so every shape below is the captured call.
"""

import torch
import triton
import triton.language as tl
import base64
import io


@triton.jit
def l2norm_fwd_kernel_row(x, y, rstd, eps, D, BD: tl.constexpr):
    i_t = tl.program_id(0).to(tl.int64)
    x += i_t * D
    y += i_t * D

    o_d = tl.arange(0, BD)
    mask = o_d < D

    b_x = tl.load(x + o_d, mask=mask, other=0.0).to(tl.float32)
    b_rstd = 1 / tl.sqrt(tl.sum(b_x * b_x) + eps)
    b_y = b_x * b_rstd
    tl.store(y + o_d, b_y, mask=mask)
    tl.store(rstd + i_t, b_rstd)


KERNELS = (l2norm_fwd_kernel_row,)
CONFIG = {'BD': 4096, 'num_warps': 4, 'num_stages': 3}
_CAPTURED = {'BD': 4096, 'num_warps': 4, 'num_stages': 3}  # written out: the reference must not follow a candidate's CONFIG
SPACE = {'BD': [4096], 'num_warps': [1, 2, 4, 8, 16, 32], 'num_stages': [1, 2, 3, 4]}
SHAPES = {"micro": {'captured': 1}, "full": {'captured': 1}, "edge": [{'captured': 1}]}
DTYPE = 'float16'
CPU_DTYPE = 'float16'
TOLERANCE = {'float32': [1e-05, 1e-05], 'float16': [0.002, 0.004], 'bfloat16': [0.016, 0.032]}
PRECISION = "exact"


def grid(config):
    return (
        4096,
        1,
        1,
    )

# The captured arguments, in the kernel's parameter order.
_TENSORS = [{'name': 'x', 'shape': [4096, 4096], 'stride': [4096, 1], 'dtype': 'float16', 'saved': '', 'int_range': [], 'alias_of': ''}, {'name': 'y', 'shape': [4096, 4096], 'stride': [4096, 1], 'dtype': 'float16', 'saved': '', 'int_range': [], 'alias_of': ''}, {'name': 'rstd', 'shape': [4096], 'stride': [1], 'dtype': 'float32', 'saved': '', 'int_range': [], 'alias_of': ''}]
_PARAMS = [['x', 'tensor', None], ['y', 'tensor', None], ['rstd', 'tensor', None], ['eps', 'scalar', 1e-06], ['D', 'scalar', 4096], ['BD', 'constexpr', 4096]]
_WRITTEN = [1, 2]  # tensors the captured launch wrote: its outputs, written in place
INPLACE = (1, 2)  # so the tools restore them between runs (examples/README.md, "In-place outputs")
# Values saved from the real call (torch.save, base64): the task is one file, as the sandbox binds only it.
_SAVED = {}


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    twin = shape.get("dtype")
    out = []
    names = [a["name"] for a in _TENSORS]
    for a in _TENSORS:
        if a["alias_of"]:  # the captured call passed the same tensor twice
            out.append(out[names.index(a["alias_of"])])
            continue
        dtype = getattr(torch, twin if twin and a["dtype"] == DTYPE else a["dtype"])
        extent = 1 + sum((n - 1) * s for n, s in zip(a["shape"], a["stride"]) if n > 0)
        if any(n == 0 for n in a["shape"]):
            extent = 0
        if a["saved"]:
            vals = torch.load(io.BytesIO(base64.b64decode(_SAVED[a["saved"]]))).to(dtype)
            t = torch.empty_strided(a["shape"], a["stride"], dtype=dtype, device=device)
            out.append(t.copy_(vals.to(device)) if device != "meta" else t)
            continue
        if dtype.is_floating_point:
            base = torch.randn(extent, device=device, dtype=dtype)
        elif dtype == torch.bool:
            base = torch.randint(0, 2, (extent,), device=device).bool()
        else:
            lo, hi = a["int_range"] or [0, 1]
            base = torch.randint(lo, hi + 1, (extent,), device=device, dtype=dtype)
        out.append(base.as_strided(a["shape"], a["stride"]))
    return tuple(out)


def _run(kernel, inputs, config, clone):
    ins, clones = list(inputs), {}
    for i, t in enumerate(inputs):  # clone: written tensors (and their aliases) are cloned once each
        if clone and (i in _WRITTEN or any(inputs[j] is t for j in _WRITTEN)):  # aliases of the originals
            ins[i] = clones.setdefault(id(t), t.clone())
    it = iter(ins)
    args, meta = [], {}
    for name, kind, value in _PARAMS:
        if kind == "tensor":
            args.append(next(it))
        elif kind == "constexpr":
            meta[name] = config.get(name, value)
        else:
            args.append(value)
    kernel[grid(config)](*args, **meta, num_warps=config["num_warps"], num_stages=config["num_stages"])
    outs = tuple(ins[i] for i in _WRITTEN)
    return outs[0] if len(outs) == 1 else outs


def launch(inputs, **config):
    _run(KERNELS[0], inputs, config, clone=False)  # in place: the INPLACE inputs are the outputs


def reference(inputs):
    return _run(_REF, inputs, _CAPTURED, clone=True)  # the expected values of the INPLACE inputs


def flops(shape):
    return 0.0  # not known from a capture: no FLOP formula, so no compute roofline


def bytes_moved(shape):
    return float(67125248)  # x read, y written, rstd written (from the kernel's loads)


@triton.jit
def _ref_l2norm_fwd_kernel_row(x, y, rstd, eps, D, BD: tl.constexpr):
    i_t = tl.program_id(0).to(tl.int64)
    x += i_t * D
    y += i_t * D
    o_d = tl.arange(0, BD)
    mask = o_d < D
    b_x = tl.load(x + o_d, mask=mask, other=0.0).to(tl.float32)
    b_rstd = 1 / tl.sqrt(tl.sum(b_x * b_x) + eps)
    b_y = b_x * b_rstd
    tl.store(y + o_d, b_y, mask=mask)
    tl.store(rstd + i_t, b_rstd)


_REF = _ref_l2norm_fwd_kernel_row
