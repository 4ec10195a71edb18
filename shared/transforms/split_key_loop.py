"""Split the key loop of a FlashAttention-style kernel (FlashAttention-2's split): the tiles wholly inside
the sequence and, when causal, wholly left of the block's first query row run first without the bound
and causal masks; only the rest (the ragged last tile, the diagonal) keep them.

    for v in range(0, HI, STEP): tile            lo = (N // STEP) * STEP
                                          ->     [if CAUSAL:] lo = tl.minimum(lo, (R0 // STEP) * STEP)
                                                 for v in range(0, lo, STEP): tile without key masks
                                                 for v in range(lo, HI, STEP): tile

A tile written inline is copied with its key masks dropped; a tile in a @triton.jit helper gets a
`MASKED: tl.constexpr` parameter and each run of masked statements becomes `if MASKED: ... else: ...`,
the loops passing MASKED=False and MASKED=True. The first loop stops at tl.minimum(lo, HI) unless HI is
N itself or the causal bound tl.minimum(N, R0 + BM) (then lo <= HI already).

Exact: every key of a tile v < lo is < N and <= every query row of the block, so the dropped masks were
true there; loop-carried state flows from the first loop into the second unchanged.

Precondition (key_loop.py): a `for v in range(0, HI, STEP)` loop whose tile builds cols = v +
tl.arange(0, STEP) and masks keys only by `cols < N` and `cols <= rows` (rows = R0 + tl.arange(0, BM)).
"""

from __future__ import annotations

import textwrap

import libcst as cst

from shared.messages import Scalar
from shared.transforms import code as C
from shared.transforms import key_loop as KL
from shared.transforms.base import Transform, TransformError, TransformSpec

SPEC = TransformSpec(
    name="split_key_loop",
    summary="attention: unmasked full key tiles first, masked diagonal/boundary tiles after "
            "(FlashAttention-2's split)",
    answers=["k_loop_masked_every_iteration", "mask_blocks_vectorization"],
    precondition="for v in range(0, HI, STEP) whose tile masks keys cols = v + tl.arange(0, STEP) only by "
                 "cols < N and the causal cols <= rows",
)


def _covers(kl: KL.KeyLoop, kdefs: dict[str, cst.BaseExpression]) -> bool:
    """HI >= lo provably: HI is N, or the causal stop tl.minimum(N, R0 + BM) under the causal guard."""
    def res(e: cst.BaseExpression) -> cst.BaseExpression:
        for _ in range(4):  # a name through the kernel's single assignments, stopping at N
            if isinstance(e, cst.Name) and e.value in kdefs and e.value != kl.bound:
                e = kdefs[e.value]
        return e
    hi = res(kl.hi)
    if C.code(hi) == kl.bound:
        return True
    if not kl.causal:
        return False
    stops = {f"{kl.row0} + {kl.row_block}", f"({kl.row0}) + {kl.row_block}"}
    r0 = kl.row0.split(" * ")
    if len(r0) == 2 and r0[1] == kl.row_block:
        stops.add(f"({r0[0]} + 1) * {kl.row_block}")

    def causal_stop(e: cst.BaseExpression) -> bool:
        return (isinstance(e, cst.Call) and C.is_tl(e, "minimum") and len(e.args) == 2
                and C.code(res(e.args[0].value)) == kl.bound and C.code(e.args[1].value) in stops)
    if kl.guard:
        return (isinstance(hi, cst.IfExp) and C.code(hi.test) == kl.guard and causal_stop(hi.body)
                and C.code(res(hi.orelse)) == kl.bound)
    return causal_stop(hi)


def _with_stop(loop: cst.For, start: str, stop: str, body: cst.BaseSuite) -> cst.For:
    it = loop.iter
    assert isinstance(it, cst.Call)
    pos = [a for a in it.args if a.keyword is None]
    args = [pos[0].with_changes(value=cst.parse_expression(start)),
            pos[1].with_changes(value=cst.parse_expression(stop)), *it.args[2:]]
    return loop.with_changes(iter=it.with_changes(args=args), body=body)


def _masked_helper(kl: KL.KeyLoop, flag: str) -> cst.FunctionDef:
    """The helper with `flag: tl.constexpr`: each run of statements that the full tiles change becomes
    `if flag: <as written> else: <unmasked>` (no else when the unmasked run is empty)."""
    helper = kl.tile.helper
    assert helper is not None and isinstance(helper.body, cst.IndentedBlock)
    body = list(helper.body.body)
    plain = KL.unmasked(kl, body)
    same = [x is not None and x.deep_equals(s) for x, s in zip(plain, body, strict=True)]
    out: list[cst.BaseStatement] = []
    i = 0
    while i < len(body):
        if same[i]:
            out.append(body[i])
            i += 1
            continue
        j = i
        while j < len(body) and not same[j]:
            j += 1
        orig = body[i:j]
        alt = [s for s in plain[i:j] if s is not None]
        lead = orig[0].leading_lines
        orig = [orig[0].with_changes(leading_lines=[]), *orig[1:]]
        block = cst.If(test=cst.Name(flag), body=cst.IndentedBlock(body=orig),
                       orelse=cst.Else(body=cst.IndentedBlock(body=alt)) if alt else None, leading_lines=lead)
        out.append(block)
        i = j
    params = C._append_param(helper.params, flag, "tl.constexpr", None)
    return helper.with_changes(params=params, body=helper.body.with_changes(body=out))


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    mod = C.parse(source)
    kl = KL.find(mod, kernel_name)
    k = kl.kernel
    if not kl.bound:
        raise TransformError(f"the key loop over {kl.var} masks no key by a sequence bound `cols < N`; "
                             "nothing to split off")
    kdefs = KL.defs(k)
    lo = C.fresh(mod, "lo")
    first_stop = lo if _covers(kl, kdefs) else f"tl.minimum({lo}, {C.code(kl.hi)})"
    causal = " and, when causal, wholly left of this block's first query row" if kl.guard else (
        " and wholly left of this block's first query row" if kl.causal else "")
    why = (f"kpilot transform split_key_loop: the key tiles wholly inside the sequence{causal} run "
           "unmasked first; only the rest (the ragged end" + (", the diagonal" if kl.causal else "")
           + ") pay for the masks.")
    n = kl.bound if kl.bound.isidentifier() else f"({kl.bound})"
    lines = [*(f"# {x}" for x in textwrap.wrap(why, 100)), f"{lo} = ({n} // {kl.step}) * {kl.step}"]
    if kl.causal:
        r0 = kl.row0 if kl.row0.replace("_", "").replace(" * ", "").isalnum() else f"({kl.row0})"
        clamp = f"{lo} = tl.minimum({lo}, ({r0} // {kl.step}) * {kl.step})"
        lines += [f"if {kl.guard}:", f"    {clamp}"] if kl.guard else [clamp]
    pre = C.stmts("\n".join(lines) + "\n")
    loop = kl.loop
    assert isinstance(loop.body, cst.IndentedBlock)
    # the comments above the loop stay above what replaces it
    pre[0] = pre[0].with_changes(leading_lines=[*loop.leading_lines, *pre[0].leading_lines])
    if kl.tile.helper is None:
        plain = [s for s in KL.unmasked(kl, list(loop.body.body)) if s is not None]
        full_loop = _with_stop(loop, "0", first_stop, loop.body.with_changes(body=plain))
        rest_loop = _with_stop(loop, lo, C.code(kl.hi), loop.body)
        new_k = k.deep_replace(loop, cst.FlattenSentinel([*pre, full_loop.with_changes(leading_lines=[]),
                                                          rest_loop]))
        return mod.deep_replace(k, new_k).code  # type: ignore[union-attr]
    helper, call = kl.tile.helper, kl.tile.call
    assert call is not None
    calls = [c for c in C.collect(mod, cst.Call) if C.call_name(c) == helper.name.value]
    if len(calls) != 1:
        raise TransformError(f"{helper.name.value} is called {len(calls)} times; the split specialises it "
                             "for this key loop only, so it must have this one call")
    flag = _flag(helper)
    new_helper = _masked_helper(kl, flag)

    def loop_with(value: str, start: str, stop: str) -> cst.For:
        new_call = C._append_arg(call, flag, cst.Name(value))
        return _with_stop(loop, start, stop, loop.body.deep_replace(call, new_call))  # type: ignore[arg-type]
    full_loop = loop_with("False", "0", first_stop).with_changes(leading_lines=[])
    rest_loop = loop_with("True", lo, C.code(kl.hi))
    new_k = k.deep_replace(loop, cst.FlattenSentinel([*pre, full_loop, rest_loop]))
    mod = mod.deep_replace(k, new_k)  # type: ignore[assignment]
    mod = mod.deep_replace(C.function(mod, helper.name.value), new_helper)  # type: ignore[arg-type,assignment]
    return mod.code


def _flag(helper: cst.FunctionDef) -> str:
    taken = set(C.param_names(helper)) | KL.names(helper)
    name, i = "MASKED", 2
    while name in taken:
        name, i = f"MASKED_{i}", i + 1
    return name


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)
