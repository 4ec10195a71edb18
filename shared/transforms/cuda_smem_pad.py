"""Shared-memory padding against bank conflicts: every 2-D `__shared__ T name[A][B];` of the CUDA C++
kernel gets `B + PAD` columns. Indexing is unchanged (only the row pitch grows), so a column walk
`tile[threadIdx.x][j]` of 32-bit words lands on 32 different banks instead of one when B is a
multiple of 32.

Precondition: a CUDA task with a 2-D __shared__ array whose last dimension is not already padded (no
`+ k` in it).
"""

from __future__ import annotations

import re

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Param, Transform, TransformError, TransformSpec
from shared.transforms.cuda_source import source_of, with_text

SPEC = TransformSpec(
    name="cuda_smem_pad",
    summary="pad 2-D __shared__ arrays by PAD columns (bank conflicts of column accesses)",
    answers=["shared_bank_conflicts"],
    params=[Param(name="pad", domain=[1, 2, 4], default=1,
                  doc="extra 4-byte words per row; 1 breaks 32-way conflicts of 32-bit column walks")],
    language="cuda",
    precondition="a 2-D __shared__ array in CUDA_SOURCE whose last dimension has no `+ k` padding",
)

DECL = re.compile(r"(__shared__\s+[\w\s]+?\s+\w+\s*\[[^\]]+\]\s*\[)([^\]]+)(\]\s*;)")


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    node, text, _ = source_of(mod)
    hits = [m for m in DECL.finditer(text) if "+" not in m.group(2)]
    if not hits:
        raise TransformError("CUDA_SOURCE has no unpadded 2-D __shared__ array (e.g. `__shared__ float t[32][32];`)")
    out, last = [], 0
    for m in hits:
        out += [text[last: m.start(2)], f"{m.group(2).strip()} + {params['pad']}"]
        last = m.end(2)
    out.append(text[last:])
    return mod.deep_replace(node, with_text(node, "".join(out))).code  # type: ignore[union-attr]


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
