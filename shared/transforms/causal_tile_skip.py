"""Causal tile skipping: a causal attention kernel whose key loop runs over every key and masks the ones
right of the diagonal stops at the block's last query row instead, so the tiles wholly above the
diagonal (about half of them) are never loaded or multiplied.

    for v in range(0, HI, STEP): tile      ->     causal_hi = tl.minimum(HI, R0 + BM) [if CAUSAL else HI]
                                                  for v in range(0, causal_hi, STEP): tile

Exact: a tile with v >= R0 + BM has every key right of every query row of the block (rows = R0 +
tl.arange(0, BM)), so its scores are all masked and the tile adds nothing to the online softmax; the
tiles that straddle the diagonal keep their mask.

Precondition (key_loop.py): a `for v in range(0, HI, STEP)` loop whose tile masks keys cols = v +
tl.arange(0, STEP) by the causal `cols <= rows` (and the bound `cols < N`, nothing else), with HI not
already naming the block's rows.
"""

from __future__ import annotations

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms import key_loop as KL
from shared.transforms.base import Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="causal_tile_skip",
    summary="causal attention: the key loop stops at the block's last query row (tiles above the diagonal "
            "are never visited)",
    answers=["k_loop_masked_every_iteration", "compute_throughput_bound", "roofline_far_below"],
    precondition="for v in range(0, HI, STEP) whose tile masks keys cols = v + tl.arange(0, STEP) by the "
                 "causal cols <= rows (rows = R0 + tl.arange(0, BM)), HI not already bounded by the rows",
)


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    kl = KL.find(mod, kernel_name)
    if not kl.causal:
        raise TransformError(f"the key loop over {kl.var} in {kl.kernel.name.value} has no causal mask "
                             "`cols <= rows` (rows = R0 + tl.arange(0, BM)): not a causal kernel")
    kdefs = KL.defs(kl.kernel)
    hi: cst.BaseExpression = kl.hi
    seen = KL.names(hi)
    for _ in range(4):  # HI through the kernel's single assignments
        if isinstance(hi, cst.Name) and hi.value in kdefs:
            hi = kdefs[hi.value]
            seen |= KL.names(hi)
    rows = KL.names(cst.parse_expression(kl.row0)) - {"tl"}
    if seen & rows:
        raise TransformError(f"the key loop over {kl.var} already stops by the block's rows "
                             f"(its stop {C.code(kl.hi)} names {', '.join(sorted(seen & rows))})")
    stop = C.code(kl.hi)
    name = C.fresh(mod, "causal_hi")
    bound = f"tl.minimum({stop}, {kl.row0} + {kl.row_block})"
    value = f"{bound} if {kl.guard} else {stop}" if kl.guard else bound
    pre = C.stmts(
        "# kpilot transform causal_tile_skip: keys right of this block's last query row are all masked;\n"
        "# their tiles are never visited.\n"
        f"{name} = {value}\n")
    loop = kl.loop
    it = loop.iter
    assert isinstance(it, cst.Call)
    pos = [a for a in it.args if a.keyword is None]
    new_it = it.with_changes(args=[pos[0], pos[1].with_changes(value=cst.Name(name)), *it.args[2:]])
    lead = loop.leading_lines
    new_k = kl.kernel.deep_replace(loop, cst.FlattenSentinel([
        pre[0].with_changes(leading_lines=[*lead, *pre[0].leading_lines]), *pre[1:],
        loop.with_changes(iter=new_it, leading_lines=[])]))
    return mod.deep_replace(kl.kernel, new_k).code  # type: ignore[union-attr]


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
