"""The key loop of a FlashAttention-style kernel, read off the syntax tree, for the attention
transformations (split_key_loop, causal_tile_skip): the loop `for v in range(0, HI, STEP)`, the tile it
runs (its own body, or a @triton.jit helper it calls with v), and every key mask in that tile.

A key mask is what the transformations may drop or prove: a conjunction of
- the sequence bound `cols < N` (cols = v + tl.arange(0, STEP), broadcast by subscripts such as
  `cols[None, :]`), all tiles with v + STEP <= N have it true;
- the causal diagonal `cols <= rows` (rows = R0 + tl.arange(0, BM)), true on a tile with v + STEP <= R0
  and false on one with v >= R0 + BM;
- names assigned only from such terms (`keep = cols < N`, `keep = keep & (...)`).
A mask that names the keys in any other way (a padding tensor, a sparse layout, a window) is not one the
transformations can reason about: the analysis refuses it, naming the term.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from shared.transforms import code as C
from shared.transforms.base import TransformError


def terms(e: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.BitAnd):
        return terms(e.left) + terms(e.right)
    return [e]


def names(e: cst.CSTNode) -> set[str]:
    return {n.value for n in C.collect(e, cst.Name)}


def _base(e: cst.BaseExpression) -> cst.BaseExpression:
    """`cols[None, :]` -> `cols` (a broadcast); parentheses dropped."""
    while isinstance(e, cst.Subscript):
        e = e.value
    return e.with_changes(lpar=[], rpar=[]) if hasattr(e, "lpar") else e


def defs(fn: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
    """Names the function assigns exactly once (`x = expr`, anywhere in its body) -> that expression."""
    seen: dict[str, list[cst.BaseExpression]] = {}
    for a in C.collect(fn.body, cst.Assign):
        for t in a.targets:
            if isinstance(t.target, cst.Name):
                seen.setdefault(t.target.value, []).append(a.value)
    return {k: v[0] for k, v in seen.items() if len(v) == 1}


def _arange(e: cst.BaseExpression | None) -> str | None:
    """`tl.arange(0, X)` -> "X"."""
    if (isinstance(e, cst.Call) and C.is_tl(e, "arange") and len(e.args) == 2
            and C.code(e.args[0].value) == "0"):
        return C.code(e.args[1].value)
    return None


@dataclass
class Tile:
    """The code one key tile runs and how its names map to the kernel's."""

    body: cst.IndentedBlock  # the loop body (inline) or the helper's body
    key: str  # the name of the tile's first key index (the loop variable, or the helper parameter)
    to_kernel: dict[str, cst.BaseExpression]  # helper parameter -> the kernel's argument expression
    helper: cst.FunctionDef | None = None
    call: cst.Call | None = None


@dataclass
class KeyLoop:
    kernel: cst.FunctionDef
    loop: cst.For
    var: str
    step: str
    hi: cst.BaseExpression
    tile: Tile
    cols: set[str]  # tile names holding v + tl.arange(0, STEP)
    mask_vars: set[str]  # tile names assigned only from key-mask terms
    bound: str = ""  # the kernel's code for N of `cols < N`
    causal: bool = False
    guard: str = ""  # the kernel's constexpr that the causal term is under ("" when unguarded)
    row0: str = ""  # rows = R0 + tl.arange(0, BM): R0 and BM in the kernel's names
    row_block: str = ""
    refusals: list[str] = field(default_factory=list)


def _kernel_expr(tile: Tile, name: str) -> cst.BaseExpression | None:
    """What a tile name means in the kernel: a helper parameter's argument, or the name itself."""
    return tile.to_kernel.get(name) if tile.helper is not None else cst.Name(name)


def _kdef(kdefs: dict[str, cst.BaseExpression], e: cst.BaseExpression | None) -> cst.BaseExpression | None:
    if isinstance(e, cst.Name) and e.value in kdefs:
        return kdefs[e.value]
    return e


def _helper_call(mod: cst.Module, body: cst.BaseSuite, var: str) -> tuple[cst.FunctionDef, cst.Call] | None:
    jit = {k.name.value: k for k in C.kernels(mod)}
    for c in C.collect(body, cst.Call):
        if isinstance(c.func, cst.Name) and c.func.value in jit and any(
            isinstance(a.value, cst.Name) and a.value.value == var for a in c.args
        ):
            return jit[c.func.value], c
    return None


def _bind(helper: cst.FunctionDef, call: cst.Call) -> dict[str, cst.BaseExpression]:
    params = C.param_names(helper)
    out: dict[str, cst.BaseExpression] = {}
    pos = [a for a in call.args if a.keyword is None and not a.star]
    for p, a in zip(params, pos, strict=False):
        out[p] = a.value
    for a in call.args:
        if a.keyword is not None:
            out[a.keyword.value] = a.value
    return out


class _Scan(cst.CSTVisitor):
    """Collects the key-mask uses in a tile (load/store masks, tl.where conditions) with the constexpr
    `if` tests around each causal term."""

    def __init__(self, ana: _Analysis) -> None:
        self.ana = ana
        self.guards: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.If):
            self.guards.append(C.code(node.test))
            node.body.visit(self)
            self.guards.pop()
            if node.orelse is not None:
                node.orelse.visit(self)
            return False
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target,
                                                                                  cst.Name):
            t = node.targets[0].target.value
            if t in self.ana.mask_vars:
                self.ana.check_mask(node.value, self.guards, allow={t})
                return False
        if isinstance(node, cst.Call):
            if C.is_tl(node, "load") or C.is_tl(node, "store"):
                m = next((a for a in node.args if a.keyword and a.keyword.value == "mask"), None)
                if m is not None and self.ana.keyed(m.value):
                    self.ana.check_mask(m.value, self.guards)
                    self.ana.uses += 1
            elif C.is_tl(node, "where") and len(node.args) == 3 and self.ana.keyed(node.args[0].value):
                self.ana.check_mask(node.args[0].value, self.guards)
                self.ana.uses += 1
        return True


class _Analysis:
    def __init__(self, kl: KeyLoop, kdefs: dict[str, cst.BaseExpression]) -> None:
        self.kl, self.kdefs = kl, kdefs
        self.mask_vars = kl.mask_vars
        self.tdefs = defs(kl.tile.helper) if kl.tile.helper is not None else {}
        self.uses = 0
        self.assigned = {t.target.value for a in C.collect(kl.tile.body, cst.Assign) for t in a.targets
                         if isinstance(t.target, cst.Name)}
        self.bounds: set[str] = set()
        self.causal_guards: list[list[str]] = []

    def keyed(self, e: cst.BaseExpression) -> bool:
        return bool(names(e) & (self.kl.cols | self.mask_vars | {self.kl.tile.key}))

    def rows(self, e: cst.BaseExpression) -> tuple[str, str] | None:
        """A tile expression that is the block's query rows `R0 + tl.arange(0, BM)`: (R0, BM) in the
        kernel's names."""
        b = _base(e)
        if not isinstance(b, cst.Name):
            return None
        src = self.tdefs.get(b.value) if self.kl.tile.helper is not None else None
        if src is None:
            src = _kdef(self.kdefs, _kernel_expr(self.kl.tile, b.value))
        if isinstance(src, cst.BinaryOperation) and isinstance(src.operator, cst.Add):
            bm = _arange(src.right)
            if bm is not None:
                return C.code(src.left), bm
        return None

    def kind(self, t: cst.BaseExpression) -> str:
        """"bound", "causal", "var" (a mask variable) or "" (not a key mask)."""
        t = t.with_changes(lpar=[], rpar=[]) if hasattr(t, "lpar") else t
        if isinstance(t, cst.Name) and t.value in self.mask_vars:
            return "var"
        if not (isinstance(t, cst.Comparison) and len(t.comparisons) == 1):
            return ""
        left, op, right = t.left, t.comparisons[0].operator, t.comparisons[0].comparator
        lk = isinstance(_base(left), cst.Name) and _base(left).value in self.kl.cols  # type: ignore[union-attr]
        rk = isinstance(_base(right), cst.Name) and _base(right).value in self.kl.cols  # type: ignore[union-attr]
        other, lt, le = (right, cst.LessThan, cst.LessThanEqual) if lk else (
            left, cst.GreaterThan, cst.GreaterThanEqual)
        if not (lk or rk) or (lk and rk):
            return ""
        if isinstance(op, lt) and isinstance(other, cst.Name) and not (names(other) & self.kl.cols):
            n = other.value
            if n in self.assigned:  # a bound the tile moves is no bound of the loop
                return ""
            k = _kernel_expr(self.kl.tile, n)
            if k is None:
                return ""
            self.bounds.add(C.code(k))
            return "bound"
        if isinstance(op, le):
            r = self.rows(other)
            if r is not None:
                if self.kl.row0 and (self.kl.row0, self.kl.row_block) != r:
                    return ""
                self.kl.row0, self.kl.row_block = r
                return "causal"
        return ""

    def check_mask(self, e: cst.BaseExpression, guards: list[str], allow: set[str] | None = None) -> None:
        for t in terms(e):
            if allow and isinstance(t, cst.Name) and t.value in allow:
                continue
            k = self.kind(t)
            if not k:
                self.kl.refusals.append(
                    f"mask term `{C.code(t)}` is neither the sequence bound (`cols < N`, cols = "
                    f"{self.kl.tile.key} + tl.arange(0, {self.kl.step})) nor the causal diagonal "
                    f"(`cols <= rows`, rows = R0 + tl.arange(0, BM))")
            elif k == "causal":
                self.causal_guards.append(list(guards))


def _mask_vars(body: cst.IndentedBlock, is_key_term) -> set[str]:  # type: ignore[no-untyped-def]
    """Tile names assigned only from key-mask terms and earlier mask names (to a fixpoint)."""
    found: set[str] = set()
    assigns = [a for a in C.collect(body, cst.Assign)
               if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name)]
    while True:
        grew = False
        for a in assigns:
            t = a.targets[0].target.value  # type: ignore[union-attr]
            if t in found:
                continue
            ts = terms(a.value)
            ok = all((isinstance(x, cst.Name) and x.value in found | {t}) or is_key_term(x) for x in ts)
            if ok and any(is_key_term(x) or (isinstance(x, cst.Name) and x.value in found) for x in ts):
                found.add(t)
                grew = True
        if not grew:
            return found


def launched(mod: cst.Module, kernel_name: str = "") -> cst.FunctionDef:
    """The named kernel, else the first @triton.jit function the task launches (`kern[grid](...)`), so a
    helper defined above the kernel is not taken for it."""
    if kernel_name:
        return C.kernel(mod, kernel_name)
    return next((k for k in C.kernels(mod) if C.launch_calls(mod, k.name.value)), None) or C.kernel(mod)


def find(mod: cst.Module, kernel_name: str = "") -> KeyLoop:
    """The kernel's key loop with its masks analysed; raises TransformError saying what is missing."""
    k = launched(mod, kernel_name)
    kdefs = defs(k)
    why: list[str] = []
    for f in C.collect(k.body, cst.For):
        it = f.iter
        if not (isinstance(it, cst.Call) and C.code(it.func) in ("range", "tl.range")
                and isinstance(f.target, cst.Name)):
            continue
        pos = [a for a in it.args if a.keyword is None]
        if len(pos) != 3 or C.code(pos[0].value) != "0":
            continue
        var, step = f.target.value, C.code(pos[2].value)
        if not (step in C.constexpr_params(k) or step.isdigit()):
            continue
        hc = _helper_call(mod, f.body, var)
        if hc is not None:
            helper, call = hc
            bind = _bind(helper, call)
            tests = {C.code(i.test) for i in C.collect(helper.body, cst.If)}
            lit = next((a for a in call.args if a.keyword is not None and a.keyword.value in tests
                        and C.code(a.value) in ("True", "False")), None)
            if lit is not None:
                raise TransformError(
                    f"{helper.name.value} is called with {C.code(lit.keyword)}={C.code(lit.value)} in the "
                    f"key loop over {var}: its tiles are specialised already (the key loop looks split "
                    "already)")
            key = next(p for p, a in bind.items() if isinstance(a, cst.Name) and a.value == var)
            assert isinstance(helper.body, cst.IndentedBlock)
            tile = Tile(body=helper.body, key=key, to_kernel=bind, helper=helper, call=call)
            tdefs = defs(helper)
        else:
            assert isinstance(f.body, cst.IndentedBlock)
            tile = Tile(body=f.body, key=var, to_kernel={})
            tdefs = {}
        # cols = v + offs_n with offs_n = tl.arange(0, STEP) (in the tile, or passed in from the kernel)
        cols: set[str] = set()
        for a in C.collect(tile.body, cst.Assign):
            if not (len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name)):
                continue
            v = a.value
            if isinstance(v, cst.BinaryOperation) and isinstance(v.operator, cst.Add):
                for x, y in ((v.left, v.right), (v.right, v.left)):
                    if isinstance(x, cst.Name) and x.value == tile.key:
                        src = y
                        if isinstance(y, cst.Name):
                            src = tdefs.get(y.value) or _kdef(kdefs, _kernel_expr(tile, y.value))
                        if _arange(src) == step:
                            cols.add(a.targets[0].target.value)  # type: ignore[union-attr]
        tile_assigns = [t.target.value for a in C.collect(tile.body, cst.Assign) for t in a.targets
                        if isinstance(t.target, cst.Name)]
        cols = {c for c in cols if tile_assigns.count(c) == 1 and tile.key not in tile_assigns}
        if not cols:
            why.append(f"loop over {var}: no `cols = {tile.key} + tl.arange(0, {step})` key index in its "
                       "tile")
            continue
        kl = KeyLoop(kernel=k, loop=f, var=var, step=step, hi=pos[1].value, tile=tile, cols=cols,
                     mask_vars=set())
        ana = _Analysis(kl, kdefs)
        kl.mask_vars = _mask_vars(tile.body, lambda t, ana=ana: ana.kind(t) in ("bound", "causal"))
        ana.mask_vars = kl.mask_vars
        kl.refusals.clear()
        ana.bounds.clear()
        ana.causal_guards.clear()
        tile.body.visit(_Scan(ana))
        if kl.refusals:
            raise TransformError(f"the key loop over {var} in {k.name.value}: {kl.refusals[0]}")
        if not ana.uses:
            why.append(f"loop over {var}: its tile masks no load, store or score by the key index")
            continue
        if len(ana.bounds) > 1:
            raise TransformError(f"the key loop over {var} bounds its keys by several values "
                                 f"{sorted(ana.bounds)}")
        kl.bound = next(iter(ana.bounds), "")
        kl.causal = bool(ana.causal_guards)
        if kl.causal:
            gs = {tuple(g) for g in ana.causal_guards}
            g = gs.pop() if len(gs) == 1 else ("?",)
            if len(g) > 1 or gs:
                raise TransformError(f"the causal mask of the key loop over {var} sits under several "
                                     "conditions")
            if g:
                test = g[0]
                kt = _kernel_expr(tile, test)
                kt_code = C.code(kt) if kt is not None else ""
                consts = C.constexpr_params(tile.helper) if tile.helper is not None else C.constexpr_params(k)
                if test not in consts or kt_code not in C.constexpr_params(k):
                    raise TransformError(f"the causal mask of the key loop over {var} is under `if {test}:`, "
                                         "which is not a constexpr of the kernel")
                kl.guard = kt_code
        return kl
    detail = f" ({'; '.join(why)})" if why else ""
    raise TransformError(f"{k.name.value} has no key loop `for v in range(0, HI, STEP)` (STEP a constexpr) "
                         f"whose tile masks its keys `cols = v + tl.arange(0, STEP)`{detail}")


class _Drop(cst.CSTTransformer):
    """The unmasked tile's expressions: key masks dropped from tl.load/tl.store (with `other=`), and
    `tl.where(key mask, x, y)` replaced by x (the mask is true on every key of a full tile)."""

    def __init__(self, kl: KeyLoop) -> None:
        self.kl = kl

    def _keymask(self, e: cst.BaseExpression) -> bool:
        return bool(names(e) & (self.kl.cols | self.kl.mask_vars))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if C.is_tl(original, "load") or C.is_tl(original, "store"):
            m = next((a for a in original.args if a.keyword and a.keyword.value == "mask"), None)
            if m is None or not self._keymask(m.value):
                return updated
            drop = ("mask", "other") if C.is_tl(original, "load") else ("mask",)
            args = [a for a in updated.args if not (a.keyword and a.keyword.value in drop)]
            tail = updated.args[-1]
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT,
                                             whitespace_after_arg=tail.whitespace_after_arg)
            return updated.with_changes(args=args)
        if C.is_tl(original, "where") and len(original.args) == 3 and self._keymask(original.args[0].value):
            return updated.args[1].value
        return updated


def _is_self_assign(s: cst.BaseStatement) -> bool:
    if not (isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1
            and isinstance(s.body[0], cst.Assign)):
        return False
    a = s.body[0]
    return len(a.targets) == 1 and C.code(a.targets[0].target) == C.code(a.value).strip("()")


def unmasked(kl: KeyLoop, body: list[cst.BaseStatement]) -> list[cst.BaseStatement | None]:
    """Each statement of a tile as it runs on a full tile (None: the statement goes): mask assignments
    and self-assignments left by a dropped tl.where go, an `if` left empty goes."""
    out: list[cst.BaseStatement | None] = []
    for s in body:
        if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign):
            a = s.body[0]
            if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name) and \
                    a.targets[0].target.value in kl.mask_vars:
                out.append(None)
                continue
        if isinstance(s, cst.If) and isinstance(s.body, cst.IndentedBlock) and s.orelse is None:
            inner = [x for x in unmasked(kl, list(s.body.body)) if x is not None]
            out.append(s.with_changes(body=s.body.with_changes(body=inner)) if inner else None)
            continue
        new = s.visit(_Drop(kl))
        out.append(None if _is_self_assign(new) else new)  # type: ignore[arg-type]
    left = set()
    for s in out:
        if s is not None:
            left |= names(s) & kl.mask_vars
    if left:
        raise TransformError(f"the key mask {min(left)} is used for more than masking (a load/store "
                             "mask or a tl.where condition); the full tiles could not drop it")
    return out
