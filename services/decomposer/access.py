"""Address analysis of global accesses: per-dim element stride of each pointer tensor, and where it came from.

A small abstract interpretation over the SSA graph, close to what Triton's AxisInfo does but keeping the
reasons a pattern needs to explain itself: stride per tensor dim is an int (elements), RT (a runtime
scalar), NA (not affine: div/rem, selects) or IND (an index that was itself loaded: gather). Flags record
how the offsets were built ("div", "rem", "rem_scaled" for the flattened-transpose idiom, "pid").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.parsers.ttgir import Module, Op, defining_op, value_type

RT = "rt"  # a runtime scalar times a nonzero stride
NA = "na"  # not affine in the tile index
IND = "ind"  # derived from loaded data

Stride = int | str


@dataclass(frozen=True)
class Affine:
    strides: tuple[Stride, ...]
    flags: frozenset[str] = frozenset()
    args: frozenset[str] = frozenset()  # function arguments that feed the value
    const: int | None = None  # scalar/splat constant value when known


@dataclass
class _Ctx:
    mod: Module
    memo: dict[str, Affine] = field(default_factory=dict)


def _add(a: Stride, b: Stride) -> Stride:
    if a == 0:
        return b
    if b == 0:
        return a
    if IND in (a, b):
        return IND
    if NA in (a, b):
        return NA
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return RT


def _rank(mod: Module, value: str) -> int:
    t = value_type(mod, value)
    return len(t.shape) if t is not None else 0


def analyze(mod: Module, value: str, ctx: _Ctx | None = None, depth: int = 0) -> Affine:
    c = ctx or _Ctx(mod)
    if value in c.memo:
        return c.memo[value]
    c.memo[value] = Affine((), frozenset({"cycle"}))
    res = _analyze(mod, value, c, depth)
    c.memo[value] = res
    return res


def _zeros(
    n: int, flags: frozenset[str] = frozenset(), args: frozenset[str] = frozenset(), const: int | None = None
) -> Affine:
    return Affine(tuple(0 for _ in range(n)), flags, args, const)


def _analyze(mod: Module, value: str, c: _Ctx, depth: int) -> Affine:
    if depth > 200:
        return Affine((), frozenset({"deep"}))
    for a in mod.args:
        if a.name == value:
            return _zeros(len(a.type.shape), args=frozenset({a.name}))
    if value in mod.iter_init:
        return analyze(mod, mod.iter_init[value], c, depth + 1)
    op = defining_op(mod, value)
    if op is None:
        return Affine((), frozenset({"unknown"}))
    rank = len(op.result_type.shape) if op.result_type is not None else _rank(mod, value)
    sub = (
        [analyze(mod, v, c, depth + 1) for v in op.operands[:3]]
        if op.name not in ("scf.for", "scf.if", "scf.while")
        else []
    )
    flags = frozenset().union(*(s.flags for s in sub)) if sub else frozenset()
    args = frozenset().union(*(s.args for s in sub)) if sub else frozenset()
    n = op.name
    if n == "tt.make_range":
        return Affine((1,))
    if n == "arith.constant":
        cv = _const_value(op)
        return _zeros(rank, const=cv)
    if n == "tt.get_program_id":
        return _zeros(0, frozenset({"pid"}))
    if n == "tt.splat":
        return _zeros(rank, flags, args, sub[0].const if sub else None)
    if n == "tt.expand_dims" and sub:
        ax = op.int_attr("axis") or 0
        s = list(sub[0].strides)
        s.insert(ax, 0)
        return Affine(tuple(s), flags, args, sub[0].const)
    if (
        n
        in (
            "tt.broadcast",
            "ttg.convert_layout",
            "arith.extsi",
            "arith.extui",
            "arith.trunci",
            "arith.index_cast",
        )
        and sub
    ):
        s = sub[0].strides
        if len(s) < rank:
            s = tuple([0] * (rank - len(s))) + tuple(s)
        return Affine(tuple(s), flags, args, sub[0].const)
    if n == "tt.trans" and sub:
        order = [
            int(x)
            for x in (op.attr("order") or "").replace("array<i32:", "").strip(" >").split(",")
            if x.strip().lstrip("-").isdigit()
        ]
        s = sub[0].strides
        if order and len(order) == len(s):
            return Affine(tuple(s[i] for i in order), flags, args)
        return Affine(tuple(reversed(s)), flags, args)
    if n in ("arith.addi", "tt.addptr", "arith.subi") and len(sub) >= 2:
        a, b = sub[0], sub[1]
        k = max(len(a.strides), len(b.strides), rank)
        sa = (0,) * (k - len(a.strides)) + a.strides
        sb = (0,) * (k - len(b.strides)) + b.strides
        if n == "arith.subi":
            sb = tuple(-x if isinstance(x, int) else x for x in sb)
        const = None
        if a.const is not None and b.const is not None and n == "arith.addi":
            const = a.const + b.const
        return Affine(tuple(_add(x, y) for x, y in zip(sa, sb, strict=True)), flags, args, const)
    if n in ("arith.muli", "arith.shli") and len(sub) >= 2:
        a, b = sub[0], sub[1]
        if all(x == 0 for x in a.strides) and any(x != 0 for x in b.strides):
            a, b = b, a
        factor: Stride = RT
        if b.const is not None:
            factor = b.const if n == "arith.muli" else (1 << b.const)
        if any(x != 0 for x in b.strides):
            return Affine(tuple(NA if x != 0 else 0 for x in a.strides), flags | {"nonaffine"}, args)
        out = []
        for x in a.strides:
            if x == 0:
                out.append(0)
            elif isinstance(x, int) and isinstance(factor, int):
                out.append(x * factor)
            elif x in (NA, IND):
                out.append(x)
            else:
                out.append(RT)
        fl = flags
        if "rem" in a.flags and factor != 1:
            fl = fl | {"rem_scaled"}
        const = a.const * b.const if a.const is not None and b.const is not None else None
        return Affine(tuple(out), fl, args, const)
    if (
        n
        in (
            "arith.divsi",
            "arith.divui",
            "arith.remsi",
            "arith.remui",
            "arith.shrsi",
            "arith.shrui",
            "arith.andi",
        )
        and sub
    ):
        tag = "div" if n in ("arith.divsi", "arith.divui", "arith.shrsi", "arith.shrui") else "rem"
        a = sub[0]
        if all(x == 0 for x in a.strides):
            return Affine(a.strides, flags, args)
        return Affine(tuple(NA if x != 0 else 0 for x in a.strides), flags | {tag}, args)
    if n in ("tt.load", "tt.descriptor_load"):
        return Affine(tuple(IND for _ in range(rank)), flags | {"loaded"}, args)
    if n == "arith.select" and len(sub) >= 3:
        a, b = sub[1], sub[2]
        if a.strides == b.strides:
            return Affine(a.strides, flags, args)
        return Affine(tuple(NA for _ in range(rank)), flags | {"select"}, args)
    if not sub:
        return Affine(tuple(NA for _ in range(rank)), frozenset({"opaque"}))
    return Affine(tuple(NA for _ in range(rank)), flags | {"opaque"}, args)


def _const_value(op: Op) -> int | None:
    t = op.text.strip()
    if t.startswith("dense<"):
        t = t[6:].split(">")[0]
    head = t.split(":")[0].strip()
    try:
        return int(head)
    except ValueError:
        return None


def new_context(mod: Module) -> _Ctx:
    return _Ctx(mod)
