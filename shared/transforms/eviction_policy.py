"""Eviction policy on streaming loads: every tl.load of the kernel without an eviction_policy gets one
(evict_first for data read once, so L2 keeps what other programs re-read; evict_last for the reverse).
PTX shows it as `ld.global.L1::evict_first` / `L2::evict_last` qualifiers.

Precondition: the kernel has a tl.load with no eviction_policy.
"""

from __future__ import annotations

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms.base import Param, Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="eviction_policy",
    summary="add eviction_policy= to the kernel's loads (streaming data out of L2's way)",
    answers=["memory_throughput_bound", "redundant_global_load", "roofline_far_below"],
    params=[Param(name="policy", domain=["evict_first", "evict_last"], default="evict_first",
                  doc="evict_first: read once, stream; evict_last: re-read by other programs, keep")],
    precondition="a tl.load without eviction_policy",
)


class _Evict(cst.CSTTransformer):
    def __init__(self, policy: str) -> None:
        self.policy, self.done = policy, 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if not C.is_tl(original, "load") or any(a.keyword and a.keyword.value == "eviction_policy"
                                                 for a in original.args):
            return updated
        self.done += 1
        return C._append_arg(updated, "eviction_policy", cst.SimpleString(f'"{self.policy}"'))  # the call's layout


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    k = C.kernel(mod, kernel_name)
    t = _Evict(str(params["policy"]))
    new_k = k.visit(t)
    if not t.done:
        raise TransformError(f"{k.name.value} has no tl.load without an eviction_policy")
    return mod.deep_replace(k, new_k).code  # type: ignore[union-attr]


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
