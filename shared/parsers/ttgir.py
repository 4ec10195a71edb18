"""Parse Triton GPU IR (TTGIR, the `ttgir` text of a compiled kernel) into operations, types and layouts.

The one TTGIR reader: the decomposer reads the whole module (`parse_ttgir`), the toolrunner's
mem_access_profile reads its global memory operations (`memory_ops`), and both decode layout attributes
with `decode_layout`.

The printed MLIR is regular enough to read line by line: one operation per line, regions opened by a
trailing `{` and closed by a leading `}`, location aliases (`#locN = loc(...)`) and layout aliases
(`#blocked = #ttg.blocked<{...}>`) at the top or bottom of the module. Generic-form ops with regions
(`"tt.reduce"(%x) <{axis = 0 : i32}> ({ ... }) : (...) -> f32 loc(#l)`) carry their type and location on
the closing line. Nothing here knows about hardware.
"""

from __future__ import annotations

import re

import msgspec

from shared.tools.decompose import LayoutInfo

_ALIAS = re.compile(r"^(#[\w.$-]+)\s*=\s*(.*)$")
_OP = re.compile(r"^(?:(%[\w.$-]+)(?::(\d+))?((?:\s*,\s*%[\w.$-]+)*)\s*=\s*)?(\"[\w.]+\"|[a-z_][\w.]*)(.*)$")
_VALUE = re.compile(r"%[\w.$-]+(?:#\d+)?")
_FILELOC = re.compile(r'^"([^"]*)":(\d+):(\d+)')
_NAMELOC = re.compile(r'^"([^"]*)"\((.*)\)$')
_DIMS = re.compile(r"^((?:\d+x)*)(.*)$")
_FUNC_NAME = re.compile(r"tt\.func\s+(?:public\s+|private\s+)?@([\w$.]+)")


class TtgirError(ValueError):
    """The text is not TTGIR this parser can read; the message says what to pass instead."""


class SrcLoc(msgspec.Struct, frozen=True):
    file: str
    line: int
    col: int
    name: str = ""  # source-level variable name from loc("name"(...))


class TType(msgspec.Struct, frozen=True):
    """A parsed MLIR type. `elem` is the element type ("f32", "bf16", "ptr<f16>", "i1")."""

    kind: str  # "tensor", "memdesc", "scalar", "ptr", "other"
    shape: tuple[int, ...] = ()
    elem: str = ""
    layout: str = ""  # "#blocked1", an inline "#ttg.slice<...>", or the memdesc's shared layout
    text: str = ""

    @property
    def pointee(self) -> str:
        return self.elem[4:-1] if self.elem.startswith("ptr<") else ""

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


class Op(msgspec.Struct):
    id: int
    name: str  # "tt.load"
    results: list[str]  # SSA names without "%"-suffix indices; multi-results as "%x#0", "%x#1"
    operands: list[str]  # SSA names used, "#i" suffix kept
    text: str  # the op's text after the name (operands, attributes, types)
    types_text: str = ""
    loc_expr: str = ""
    loops: tuple[int, ...] = ()  # ids of enclosing scf.for / scf.while, outermost first
    ifs: tuple[int, ...] = ()  # ids of enclosing scf.if
    parent: int | None = None  # id of the op whose region holds this op
    block_args: list[str] = msgspec.field(default_factory=list)
    loc: SrcLoc | None = None
    result_type: TType | None = None
    operand_types: list[TType] = msgspec.field(default_factory=list)
    locs: tuple[SrcLoc, ...] = ()  # every file location loc_expr names, callee first (loc picks one)
    source: str = ""  # the op's first line, stripped

    def attr(self, key: str) -> str | None:
        m = re.search(rf"(?:^|[{{,\s]){re.escape(key)}\s*=\s*([^,}}]+)", self.text)
        return m.group(1).strip() if m else None

    def int_attr(self, key: str) -> int | None:
        v = self.attr(key)
        if v is None:
            return None
        m = re.match(r"-?\d+", v)
        return int(m.group(0)) if m else None


class Arg(msgspec.Struct):
    name: str
    type: TType
    divisibility: int | None


class Module(msgspec.Struct):
    func: str
    args: list[Arg]
    ops: list[Op]
    layouts: dict[str, str]  # alias -> attribute text
    num_warps: int
    target: str
    threads_per_warp: int
    file: str  # the kernel's source file (from the function's loc)
    by_result: dict[str, int]  # SSA name -> op id (block args map to the op that defines them)
    iter_init: dict[str, str]  # loop block arg -> its init value
    warnings: list[str] = msgspec.field(default_factory=list)


def _balanced_strip(text: str, open_: str, close: str) -> str:
    """Remove balanced `open_ ... close` groups (attribute dictionaries) from text, but not those inside a
    type's or attribute's parameters: `tensor<32xi32, #ttg.slice<{dim = 0, parent = #blocked}>>` keeps its
    slice (a `<` right after a name opens parameters; the generic form's ` <{axis = 0 : i32}>` is stripped)."""
    out, depth, angle, prev = [], 0, 0, ""
    for ch in text:
        if depth == 0 and ch == "<" and (prev.isalnum() or prev in "_."):
            angle += 1
        elif depth == 0 and ch == ">" and angle and prev != "-":
            angle -= 1
        elif angle == 0 and ch == open_:
            depth += 1
        elif angle == 0 and ch == close and depth:
            depth -= 1
            prev = ch
            continue
        if depth == 0:
            out.append(ch)
        prev = ch
    return "".join(out)


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside <>, (), [], {} nesting."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}" and depth:
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if cur and "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _strip_loc(text: str) -> tuple[str, str]:
    """Split `... loc(X)` at the last top-level loc( into (text, X)."""
    i = text.rfind(" loc(")
    if i < 0:
        if text.startswith("loc("):
            i = -1
        else:
            return text, ""
    start = i + 5
    depth, j = 1, start
    while j < len(text) and depth:
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
        j += 1
    return (text[: max(i, 0)] + text[j:]).strip(), text[start : j - 1]


def parse_type(text: str) -> TType:
    t = text.strip()
    if t.startswith("tensor<") and t.endswith(">"):
        parts = split_top(t[7:-1])
        m = _DIMS.match(parts[0])
        assert m is not None
        dims = tuple(int(d) for d in m.group(1).split("x") if d)
        elem = m.group(2)
        if elem.startswith("!tt.ptr<"):
            elem = "ptr<" + elem[8:-1].split(",")[0] + ">"
        return TType("tensor", dims, elem, parts[1] if len(parts) > 1 else "", t)
    if t.startswith(("!ttg.memdesc<", "<")):
        body = t[t.index("<") + 1 : -1]
        parts = split_top(body)
        m = _DIMS.match(parts[0])
        assert m is not None
        dims = tuple(int(d) for d in m.group(1).split("x") if d)
        return TType("memdesc", dims, m.group(2), parts[1] if len(parts) > 1 else "", t)
    if t.startswith("!tt.ptr<"):
        return TType("ptr", (), "ptr<" + t[8:-1].split(",")[0] + ">", "", t)
    if re.fullmatch(r"[a-z]+\d*(?:[A-Z]\w*)?", t):
        return TType("scalar", (), t, "", t)
    return TType("other", (), "", "", t)


def _split_types(types_text: str) -> tuple[list[TType], TType | None]:
    """`a, b : T` forms: returns (operand types, result type)."""
    t = types_text.strip()
    if not t:
        return [], None
    if "->" in t:
        lhs, rhs = t.rsplit("->", 1)
        lhs = lhs.strip()
        if lhs.startswith("(") and lhs.endswith(")"):
            lhs = lhs[1:-1]
        ins = [parse_type(x) for s in split_top(lhs) for x in split_top(s, "*")]
        rhs = rhs.strip()
        if rhs.startswith("(") and rhs.endswith(")"):
            outs = split_top(rhs[1:-1])
            return ins, parse_type(outs[0]) if outs else None
        return ins, parse_type(rhs)
    ins = [parse_type(x) for s in split_top(t) for x in split_top(s, "*")]
    return ins, (ins[0] if ins else None)


class _LocResolver:
    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases = aliases
        self.memo: dict[str, list[SrcLoc]] = {}

    def resolve(self, expr: str, depth: int = 0) -> list[SrcLoc]:
        """All file locations an expression names, callee first (callsite(a at b) -> a..., b...)."""
        e = expr.strip()
        if depth > 64 or not e or e == "unknown":
            return []
        if e.startswith("#"):
            if e not in self.memo:
                self.memo[e] = []  # cycle guard
                body = self.aliases.get(e, "")
                if body.startswith("loc(") and body.endswith(")"):
                    body = body[4:-1]
                self.memo[e] = self.resolve(body, depth + 1)
            return self.memo[e]
        m = _FILELOC.match(e)
        if m:
            return [SrcLoc(m.group(1), int(m.group(2)), int(m.group(3)))]
        m = _NAMELOC.match(e)
        if m:
            inner = self.resolve(m.group(2), depth + 1)
            return [SrcLoc(x.file, x.line, x.col, x.name or m.group(1)) for x in inner]
        if e.startswith("callsite(") and e.endswith(")"):
            body = e[9:-1]
            d, i = 0, 0
            while i < len(body):
                if body[i] == "(":
                    d += 1
                elif body[i] == ")":
                    d -= 1
                elif d == 0 and body.startswith(" at ", i):
                    return self.resolve(body[:i], depth + 1) + self.resolve(body[i + 4 :], depth + 1)
                i += 1
            return []
        if e.startswith("fused"):
            k = e.find("[")
            out: list[SrcLoc] = []
            for part in split_top(e[k + 1 : e.rfind("]")]):
                out += self.resolve(part, depth + 1)
            return out
        return []

    @staticmethod
    def pick(locs: list[SrcLoc], file: str) -> SrcLoc | None:
        """The location in the kernel's own file (else the first), named by any name the chain carries."""
        if not locs:
            return None
        named = next((x.name for x in locs if x.name), "")
        for x in locs:
            if x.file == file:
                return SrcLoc(x.file, x.line, x.col, x.name or named)
        return SrcLoc(locs[0].file, locs[0].line, locs[0].col, locs[0].name or named)


def _parse_args(sig: str) -> list[tuple[str, str, str]]:
    """`%a: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc(...)` list -> (name, type, attrs)."""
    out = []
    for part in split_top(sig):
        part, _ = _strip_loc(part)
        m = re.match(r"(%[\w.$-]+)\s*:\s*(.*)$", part)
        if not m:
            continue
        rest = m.group(2)
        attrs = ""
        k = rest.find(" {")
        if k >= 0:
            attrs = rest[k:]
            rest = rest[:k]
        out.append((m.group(1), rest.strip(), attrs))
    return out


def function_names(text: str) -> list[str]:
    """The names of the module's tt.func definitions and declarations, in text order."""
    return _FUNC_NAME.findall(text)


def parse_ttgir(text: str, kernel: str = "") -> Module:
    """Parse one TTGIR module; `kernel` picks the tt.func (default: the first public one)."""
    if "tt.func" not in text:
        raise TtgirError(
            "no tt.func in the text: pass the `ttgir` artifact of a compiled Triton kernel "
            "(compile tool output asm['ttgir']), not TTIR, PTX or Python source"
        )
    aliases: dict[str, str] = {}
    lines = text.splitlines()
    for raw in lines:
        s = raw.strip()
        if s.startswith("#"):
            m = _ALIAS.match(s)
            if m:
                aliases[m.group(1)] = m.group(2)
    layouts = {k: v for k, v in aliases.items() if not v.startswith("loc(")}
    resolver = _LocResolver(aliases)

    num_warps, tpw, target = 4, 32, ""
    ops: list[Op] = []
    args: list[Arg] = []
    func = ""
    func_loc = ""
    in_func = False
    done = False
    stack: list[Op | None] = []  # open regions: the op owning each, None for module/func
    by_result: dict[str, int] = {}
    iter_init: dict[str, str] = {}
    pending_yield_loop: list[int] = []
    yields: dict[int, list[str]] = {}

    for raw in lines:
        s = raw.strip()
        if not s or s.startswith(("#", "//")) or done:
            continue
        if s.startswith("module"):
            m = re.search(r'"ttg.num-warps"\s*=\s*(\d+)', s)
            num_warps = int(m.group(1)) if m else num_warps
            m = re.search(r'"ttg.threads-per-warp"\s*=\s*(\d+)', s)
            tpw = int(m.group(1)) if m else tpw
            m = re.search(r'ttg.target\s*=\s*"([^"]+)"', s)
            target = m.group(1) if m else target
            continue
        if not in_func:
            m = re.match(
                r"tt\.func\s+(?:public\s+|private\s+)?@([\w$.]+)\((.*)\)\s*(?:->.*?)?(?:attributes.*)?\{$", s
            )
            if m and (not kernel or m.group(1) == kernel):
                func = m.group(1)
                in_func = True
                for name, ty, attrs in _parse_args(m.group(2)):
                    dm = re.search(r"tt\.divisibility\s*=\s*(\d+)", attrs)
                    args.append(Arg(name, parse_type(ty), int(dm.group(1)) if dm else None))
                stack = [None]
            continue
        if s.startswith("}"):
            closing = stack.pop() if stack else None
            rest = s[1:].lstrip(")").strip()
            if rest.startswith(("else", "do")):  # scf.if's else region, scf.while's after region
                stack.append(closing)
                continue
            if closing is not None:
                body, loc = _strip_loc(rest)
                if loc:
                    closing.loc_expr = loc
                if body.startswith(":"):
                    closing.types_text = body[1:].strip()
            elif not stack:
                m = re.search(r"loc\((#[\w]+)\)", s)
                func_loc = m.group(1) if m else func_loc
                done = True
            continue
        if s.startswith("^bb"):
            owner = stack[-1] if stack else None
            names = re.findall(r"(%[\w.$-]+)\s*:", s)
            if owner is not None:
                owner.block_args += names
                for n in names:
                    by_result[n] = owner.id
            continue
        m = _OP.match(s)
        if not m:
            continue
        res0, nres, more, name, rest = m.groups()
        name = name.strip('"')
        opens = s.endswith("{")
        body = rest[:-1].rstrip() if opens else rest
        if opens and body.endswith("("):
            body = body[:-1].rstrip()
        body, loc = _strip_loc(body)
        enclosing = [o for o in stack if o is not None]
        op = Op(
            id=len(ops),
            name=name,
            results=[],
            operands=[],
            text=body,
            loc_expr=loc,
            loops=tuple(o.id for o in enclosing if o.name in ("scf.for", "scf.while")),
            ifs=tuple(o.id for o in enclosing if o.name == "scf.if"),
            parent=enclosing[-1].id if enclosing else None,
            source=s,
        )
        if res0:
            if nres:
                op.results = [f"{res0}#{i}" for i in range(int(nres))]
            else:
                op.results = [res0] + re.findall(r"%[\w.$-]+", more or "")
        for r in op.results:
            by_result[r] = op.id
        if res0 and nres:
            by_result[res0] = op.id
        head = _balanced_strip(_balanced_strip(body, "{", "}"), "[", "]") if name != "scf.for" else body
        if name == "scf.for":
            fm = re.match(r"\s*(%[\w.$-]+)\s*=\s*(.*)$", body)
            if fm:
                op.block_args.append(fm.group(1))
                by_result[fm.group(1)] = op.id
            for a, init in re.findall(
                r"(%[\w.$-]+)\s*=\s*(%[\w.$-]+(?:#\d+)?)", body.split("iter_args", 1)[-1]
            ):
                op.block_args.append(a)
                by_result[a] = op.id
                iter_init[a] = init
            op.operands = [v for v in _VALUE.findall(body) if v not in op.block_args]
            tm = re.search(r"->\s*\((.*)\)\s*(?::\s*\w+)?\s*$", body)
            op.types_text = f"-> ({tm.group(1)})" if tm else ""
        else:
            head = " " + head
            k = head.find(" : ")
            operand_part = head if k < 0 else head[:k]
            if k >= 0:
                op.types_text = head[k + 3 :]
            op.operands = _VALUE.findall(operand_part)
        if name == "scf.yield" and enclosing:
            yields[enclosing[-1].id] = op.operands
        ops.append(op)
        if opens:
            stack.append(op)
    if not func:
        raise TtgirError(
            f"kernel {kernel!r} not found: the TTGIR defines "
            + ", ".join(function_names(text))
        )
    del pending_yield_loop
    file = ""
    if func_loc:
        floc = resolver.resolve(func_loc)
        file = floc[0].file if floc else ""
    for op in ops:
        if op.loc_expr:
            locs = resolver.resolve(op.loc_expr)
            op.locs = tuple(locs)
            op.loc = resolver.pick(locs, file)
        ins, out = _split_types(op.types_text)
        op.operand_types = ins
        op.result_type = _result_type(op, ins, out)
    mod = Module(func, args, ops, layouts, num_warps, target, tpw, file, by_result, iter_init)
    _type_loop_results(mod, yields)
    return mod


def _result_type(op: Op, ins: list[TType], out: TType | None) -> TType | None:
    if not op.results:
        return None
    if op.name in ("tt.load", "tt.descriptor_load") and ins:
        p = ins[0]
        if p.kind == "tensor" and p.pointee:
            return TType("tensor", p.shape, p.pointee, p.layout, p.text)
        if p.kind == "ptr":
            return TType("scalar", (), p.pointee, "", p.pointee)
        return out
    if op.name == "tt.splat" and out is not None and "->" not in op.types_text:
        return out
    return out


def _type_loop_results(mod: Module, yields: dict[int, list[str]]) -> None:
    """scf.for results have their types in `-> (...)`; keep them on the op for dataflow."""
    for op in mod.ops:
        if op.name in ("scf.for", "scf.if", "scf.while") and op.types_text.startswith("->"):
            inner = op.types_text[2:].strip()
            if inner.startswith("(") and inner.endswith(")"):
                inner = inner[1:-1]
            ts = split_top(inner)
            op.result_type = parse_type(ts[0]) if ts else None


def value_type(mod: Module, value: str) -> TType | None:
    """Type of an SSA value: an op result, a function argument or a loop block argument."""
    base = value
    for a in mod.args:
        if a.name == value:
            return a.type
    if value in mod.iter_init:
        return value_type(mod, mod.iter_init[value])
    oid = mod.by_result.get(value)
    if oid is None:
        base = value.split("#")[0]
        oid = mod.by_result.get(base)
    if oid is None:
        return None
    op = mod.ops[oid]
    if op.name in ("scf.for", "scf.if") and "#" in value and op.types_text.startswith("->"):
        inner = op.types_text[2:].strip().strip("()")
        ts = split_top(inner)
        i = int(value.split("#")[1])
        return parse_type(ts[i]) if i < len(ts) else None
    return op.result_type


def defining_op(mod: Module, value: str) -> Op | None:
    oid = mod.by_result.get(value)
    if oid is None:
        oid = mod.by_result.get(value.split("#")[0])
    return mod.ops[oid] if oid is not None else None


# Layout attributes: `#blocked1 = #ttg.blocked<{sizePerThread = [1, 4], ...}>`, slices, dot operands, shared.

_LAYOUT_KIND = re.compile(r"#(?:ttg|ttng|triton_gpu)\.(\w+)")


def _layout_ints(text: str, key: str) -> list[int]:
    m = re.search(rf"\b{key}\s*=\s*\[([^\]]*)\]", text)
    return [int(x) for x in re.findall(r"-?\d+", m.group(1))] if m else []


def _layout_int(text: str, key: str) -> int | None:
    m = re.search(rf"\b{key}\s*=\s*(-?\d+)", text)
    return int(m.group(1)) if m else None


def decode_layout(name: str, text: str) -> LayoutInfo:
    """One layout attribute's text (`#ttg.blocked<{...}>`) decoded; `name` is its alias or the text itself."""
    m = _LAYOUT_KIND.match(text.strip())
    kind = m.group(1) if m else "other"
    tr = re.search(r"\btransposed\s*=\s*(true|false)", text)
    return LayoutInfo(
        name=name,
        kind=kind,
        size_per_thread=_layout_ints(text, "sizePerThread"),
        threads_per_warp=_layout_ints(text, "threadsPerWarp"),
        warps_per_cta=_layout_ints(text, "warpsPerCTA"),
        order=_layout_ints(text, "order"),
        vec=_layout_int(text, "vec"),
        per_phase=_layout_int(text, "perPhase"),
        max_phase=_layout_int(text, "maxPhase"),
        swizzle_bytes=_layout_int(text, "swizzlingByteWidth"),
        transposed=None if tr is None else tr.group(1) == "true",
        mma_version=_layout_int(text, "versionMajor"),
        instr_shape=_layout_ints(text, "instrShape"),
    )


def decode_layouts(aliases: dict[str, str]) -> dict[str, LayoutInfo]:
    """A module's layout aliases (Module.layouts) decoded, the non-layout ones (`#smem`, ...) left out."""
    return {k: decode_layout(k, v) for k, v in aliases.items() if _LAYOUT_KIND.match(v.strip())}


def resolve_layout(layout: str, table: dict[str, LayoutInfo]) -> tuple[LayoutInfo | None, int | None]:
    """The base layout of a type's layout string and, for a slice, the sliced-away dim.

    `#ttg.slice<{dim = 1, parent = #blocked}>` -> (#blocked, 1); `#blocked1` -> (#blocked1, None);
    `#ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>` -> (#mma, None).
    """
    s = layout.strip()
    if s in table:
        return table[s], None
    m = re.search(r"parent\s*=\s*(#[\w.$-]+)", s)
    if m:
        base, _ = resolve_layout(m.group(1), table)
        return base, _layout_int(s, "dim") if "slice" in s else None
    if s.startswith(("#ttg.", "#ttng.")):
        return decode_layout(s, s), None
    return None, None
