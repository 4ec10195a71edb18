"""Captured by `kpilot capture` from /work/main/benchmarks/capture/program.py:43: kernel swiglu_fwd.

20 call(s) of this argument signature were observed. The kernel and its jit helpers are copied
verbatim (decorators replaced by @triton.jit); the reference is a frozen copy of the original (`_ref_*`) at
the captured config. Sizes are fixed by the capture, so every shape below is the captured call.
"""

import torch
import triton
import triton.language as tl
import base64
import io


@triton.jit
def swiglu_fwd(e, g, h, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    e_row = tl.load(e + offs, mask=mask, other=0).to(tl.float32)
    g_row = tl.load(g + offs, mask=mask, other=0)
    f_row = (e_row * tl.sigmoid(e_row)).to(g_row.dtype)
    tl.store(h + offs, f_row * g_row, mask=mask)


KERNELS = (swiglu_fwd,)
CONFIG = {'BLOCK_SIZE': 1024, 'num_warps': 4, 'num_stages': 3}
_CAPTURED = dict(CONFIG)
SPACE = {'BLOCK_SIZE': [256, 512, 1024, 2048, 4096], 'num_warps': [1, 2, 4, 8, 16], 'num_stages': [1, 2, 3, 4]}
SHAPES = {"micro": {'captured': 1}, "full": {'captured': 1}, "edge": [{'captured': 1}]}
DTYPE = 'bfloat16'
CPU_DTYPE = 'float32'
TOLERANCE = {"float32": [1e-5, 1e-5], "float16": [1e-3, 1e-3], "bfloat16": [1e-2, 1e-2]}
PRECISION = "exact"


def grid(config):
    return (
        triton.cdiv(45088768, config['BLOCK_SIZE']),
        1,
        1,
    )

# The captured arguments, in the kernel's parameter order.
_TENSORS = [{'name': 'e', 'shape': [4096, 11008], 'stride': [11008, 1], 'dtype': 'bfloat16', 'saved': '', 'int_range': [], 'alias_of': ''}, {'name': 'g', 'shape': [4096, 11008], 'stride': [11008, 1], 'dtype': 'bfloat16', 'saved': '', 'int_range': [], 'alias_of': ''}, {'name': 'h', 'shape': [4096, 11008], 'stride': [11008, 1], 'dtype': 'bfloat16', 'saved': '', 'int_range': [], 'alias_of': ''}]
_PARAMS = [['e', 'tensor', None], ['g', 'tensor', None], ['h', 'tensor', None], ['n_elements', 'scalar', 45088768], ['BLOCK_SIZE', 'constexpr', 1024]]
_WRITTEN = [2]  # tensors the captured launch wrote (its outputs; cloned so inputs stay intact)
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


def _run(kernel, inputs, config):
    ins, clones = list(inputs), {}
    for i, t in enumerate(ins):  # written tensors (and their aliases) are cloned once each
        if i in _WRITTEN or any(ins[j] is t for j in _WRITTEN):
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
    return _run(KERNELS[0], inputs, config)


def reference(inputs):
    return _run(_REF, inputs, _CAPTURED)


def flops(shape):
    return 0.0  # not known from a capture: no FLOP formula, so no compute roofline


def bytes_moved(shape):
    return float(360710144)


@triton.jit
def _ref_swiglu_fwd(e, g, h, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    e_row = tl.load(e + offs, mask=mask, other=0).to(tl.float32)
    g_row = tl.load(g + offs, mask=mask, other=0)
    f_row = (e_row * tl.sigmoid(e_row)).to(g_row.dtype)
    tl.store(h + offs, f_row * g_row, mask=mask)


_REF = _ref_swiglu_fwd
