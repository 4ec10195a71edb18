"""Captured by `kpilot capture` from /tmp/oss-site/liger_kernel/ops/swiglu.py:57: kernel _swiglu_forward_kernel.

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
def _swiglu_forward_kernel(
    a_ptr, b_ptr, c_ptr, stride, gate_multiplier, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr
):
    program_id = tl.program_id(0).to(tl.int64)

    # locate start index
    a_ptr += program_id * stride
    b_ptr += program_id * stride
    c_ptr += program_id * stride

    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols

    # sigmoid requires type float32
    a_row = tl.load(a_ptr + col_offsets, mask=mask, other=0).to(tl.float32) * gate_multiplier.to(tl.float32)
    b_row = tl.load(b_ptr + col_offsets, mask=mask, other=0)
    c_row = silu(a_row).cast(b_row.dtype) * b_row
    tl.store(c_ptr + col_offsets, c_row, mask=mask)


@triton.jit
def silu(x):
    return x * tl.sigmoid(x)


KERNELS = (_swiglu_forward_kernel,)
CONFIG = {'n_cols': 11008, 'BLOCK_SIZE': 16384, 'num_warps': 16, 'num_stages': 3}
_CAPTURED = {'n_cols': 11008, 'BLOCK_SIZE': 16384, 'num_warps': 16, 'num_stages': 3}  # written out: the reference must not follow a candidate's CONFIG
SPACE = {'n_cols': [11008], 'BLOCK_SIZE': [16384, 32768], 'num_warps': [1, 2, 4, 8, 16], 'num_stages': [1, 2, 3, 4]}
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
_TENSORS = [{'name': 'a_ptr', 'shape': [4096, 11008], 'stride': [11008, 1], 'dtype': 'float16', 'saved': '', 'int_range': [], 'alias_of': ''}, {'name': 'b_ptr', 'shape': [4096, 11008], 'stride': [11008, 1], 'dtype': 'float16', 'saved': '', 'int_range': [], 'alias_of': ''}, {'name': 'c_ptr', 'shape': [4096, 11008], 'stride': [11008, 1], 'dtype': 'float16', 'saved': '', 'int_range': [], 'alias_of': ''}]
_PARAMS = [['a_ptr', 'tensor', None], ['b_ptr', 'tensor', None], ['c_ptr', 'tensor', None], ['stride', 'scalar', 11008], ['gate_multiplier', 'scalar', 1.0], ['n_cols', 'constexpr', 11008], ['BLOCK_SIZE', 'constexpr', 16384]]
_WRITTEN = [2]  # tensors the captured launch wrote: its outputs, written in place
INPLACE = (2,)  # so the tools restore them between runs (examples/README.md, "In-place outputs")
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
    return float(270532608)  # a_ptr read, b_ptr read, c_ptr written (from the kernel's loads)


@triton.jit
def _ref__swiglu_forward_kernel(a_ptr, b_ptr, c_ptr, stride, gate_multiplier, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)
    a_ptr += program_id * stride
    b_ptr += program_id * stride
    c_ptr += program_id * stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    a_row = tl.load(a_ptr + col_offsets, mask=mask, other=0).to(tl.float32) * gate_multiplier.to(tl.float32)
    b_row = tl.load(b_ptr + col_offsets, mask=mask, other=0)
    c_row = _ref_silu(a_row).cast(b_row.dtype) * b_row
    tl.store(c_ptr + col_offsets, c_row, mask=mask)


@triton.jit
def _ref_silu(x):
    return x * tl.sigmoid(x)


_REF = _ref__swiglu_forward_kernel
