"""`__launch_bounds__` on a CUDA C++ kernel: the block size launch() uses, written into the kernel's
declaration, so ptxas allocates registers for exactly that many threads (without it ptxas must assume
1024 threads per block, or spills/under-occupies by guessing), plus a minimum of resident blocks per SM.

Precondition: a CUDA task whose launch passes `block=(x, y, z)` with every entry an int literal or a
CONFIG key (CONFIG entries reach the source as -D macros), and a `__global__ void KERNEL_NAME(` without
launch bounds in CUDA_SOURCE.
"""

from __future__ import annotations

import re

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Param, Transform, TransformError, TransformSpec
from shared.transforms.cuda_source import source_of, with_text

SPEC = TransformSpec(
    name="cuda_launch_bounds",
    summary="__launch_bounds__(block threads, min blocks per SM) on the CUDA C++ kernel",
    answers=["register_spills", "occupancy_limited_by_registers", "latency_bound"],
    params=[Param(name="min_blocks", domain=[1, 2, 4], default=1,
                  doc="resident blocks per SM ptxas must allow (caps registers per thread)")],
    language="cuda",
    precondition="launch block=(...) of int literals / CONFIG keys; __global__ kernel without launch bounds",
)


def _block(mod: cst.Module, config_keys: set[str]) -> list[str]:
    for call in C.collect(mod, cst.Call):
        for a in call.args:
            if a.keyword is not None and a.keyword.value == "block" and isinstance(a.value, cst.Tuple):
                dims = [C.code(e.value) for e in a.value.elements]
                bad = [d for d in dims if not (d.isdigit() or d in config_keys)]
                if bad:
                    raise TransformError(f"block dims {bad} are neither int literals nor CONFIG keys: the source "
                                         "cannot know them")
                return dims
    raise TransformError("no launch with block=(x, y, z) found")


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    node, text, name = source_of(mod)
    cfg = C.top_assign(mod, "CONFIG")
    keys = {C.code(e.key).strip("\"'") for e in cfg[1].value.elements  # type: ignore[union-attr]
            if isinstance(e, cst.DictElement)} if cfg and isinstance(cfg[1].value, cst.Dict) else set()
    dims = _block(mod, keys)
    decl = re.compile(rf"__global__\s+void\s+(__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\)\s*)?{re.escape(name)}\s*\(")
    m = decl.search(text)
    if m is None:
        raise TransformError(f"CUDA_SOURCE declares no `__global__ void {name}(`")
    if m.group(1):
        raise TransformError(f"{name} already has {m.group(1).strip()}")
    threads = " * ".join(f"({d})" for d in dims)
    new = text[: m.start()] + f"__global__ void __launch_bounds__({threads}, {params['min_blocks']}) {name}(" + \
        text[m.end():]
    return mod.deep_replace(node, with_text(node, new)).code  # type: ignore[union-attr]


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
