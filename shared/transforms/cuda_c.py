"""A small reader of the straight-line CUDA C++ kernel bodies the CUDA transformations rewrite: tokens with
their spans in the source, statements (declarations, `if (...)` with a statement or a block, plain
statements), and the additive/multiplicative terms of an index expression. It is not a C++ parser: what it
does not recognise it reports (TransformError naming the text), so a rewrite refuses instead of guessing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from shared.transforms.base import TransformError

_TOKEN = re.compile(r"\s*(//[^\n]*|/\*.*?\*/|[A-Za-z_]\w*|\d+[\w.]*|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|"
                    r"->|[-+*/%&|^]=|\S)", re.DOTALL)
TYPE_WORDS = {"int", "long", "unsigned", "signed", "short", "size_t", "int64_t", "int32_t", "uint32_t",
              "uint64_t", "const", "auto", "ptrdiff_t"}


@dataclass(frozen=True)
class Tok:
    text: str
    start: int
    end: int


def tokens(text: str) -> tuple[list[Tok], list[str]]:
    """(code tokens, the comments met on the way, in order)."""
    out: list[Tok] = []
    comments: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            break
        t = m.group(1)
        if t.startswith(("//", "/*")):
            comments.append(t)
        else:
            out.append(Tok(t, m.start(1), m.end(1)))
        pos = m.end()
    return out, comments


def span(text: str, toks: list[Tok]) -> str:
    return text[toks[0].start: toks[-1].end] if toks else ""


def _match(toks: list[Tok], i: int) -> int:
    """Index of the token closing the bracket at toks[i]."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    want, depth = pairs[toks[i].text], 0
    for j in range(i, len(toks)):
        if toks[j].text == toks[i].text:
            depth += 1
        elif toks[j].text == want:
            depth -= 1
            if depth == 0:
                return j
    raise TransformError(f"unbalanced {toks[i].text!r} in the kernel body")


@dataclass
class Stmt:
    """kind: "if" (cond, body), "block" (body) or "simple" (toks: the statement without its `;`)."""

    kind: str
    toks: list[Tok] = field(default_factory=list)
    cond: list[Tok] = field(default_factory=list)
    body: list[Stmt] = field(default_factory=list)


def statements(toks: list[Tok]) -> list[Stmt]:
    out: list[Stmt] = []
    i = 0
    while i < len(toks):
        s, i = _statement(toks, i)
        out.append(s)
    return out


def _statement(toks: list[Tok], i: int) -> tuple[Stmt, int]:
    t = toks[i].text
    if t == "{":
        j = _match(toks, i)
        return Stmt("block", body=statements(toks[i + 1: j])), j + 1
    if t == "if":
        if i + 1 >= len(toks) or toks[i + 1].text != "(":
            raise TransformError("an `if` without a parenthesised condition")
        j = _match(toks, i + 1)
        inner, k = _statement(toks, j + 1)
        if k < len(toks) and toks[k].text == "else":
            raise TransformError("an `if ... else` in the kernel body (only guards without else are read)")
        body = inner.body if inner.kind == "block" else [inner]
        return Stmt("if", cond=toks[i + 2: j], body=body), k
    if t in ("for", "while", "do", "switch", "goto", "else"):
        raise TransformError(f"a `{t}` statement in the kernel body (only straight-line code is read)")
    depth, j = 0, i
    while j < len(toks):
        x = toks[j].text
        if x in "([{":
            depth += 1
        elif x in ")]}":
            depth -= 1
        elif x == ";" and depth == 0:
            return Stmt("simple", toks=toks[i:j]), j + 1
        j += 1
    raise TransformError(f"a statement without `;`: {' '.join(x.text for x in toks[i:])[:80]}")


def split_top(toks: list[Tok], seps: set[str]) -> list[tuple[str, list[Tok]]]:
    """Split at the separators outside brackets: [(the separator before the part or "", part), ...]."""
    out: list[tuple[str, list[Tok]]] = []
    depth, cur, sep = 0, [], ""
    for t in toks:
        if t.text in "([{":
            depth += 1
        elif t.text in ")]}":
            depth -= 1
        if depth == 0 and t.text in seps and cur:
            out.append((sep, cur))
            cur, sep = [], t.text
            continue
        cur.append(t)
    out.append((sep, cur))
    return out


def strip_cast(toks: list[Tok]) -> list[Tok]:
    """`(long long)c` -> `c`; `(c)` -> `c`."""
    while toks and toks[0].text == "(":
        j = _match(toks, 0)
        inner = [t.text for t in toks[1:j]]
        if j < len(toks) - 1 and inner and all(w in TYPE_WORDS for w in inner):
            toks = toks[j + 1:]
        elif j == len(toks) - 1:
            toks = toks[1:j]
        else:
            break
    return toks


def words(toks: list[Tok]) -> str:
    return "".join(t.text for t in toks)
