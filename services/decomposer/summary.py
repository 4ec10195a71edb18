"""The compact IR summary for prompts: one line per node of interest, most important first, <= 750 tokens.

Tokens are counted with shared/tokens.py (the Qwen2.5 tokenizer), as the planner counts its context.
"""

from __future__ import annotations

from shared.tokens import TOKEN_LIMIT, count_tokens, truncate_lines
from shared.tools.decompose import Finding, Node, Roofline

# node ops worth a line, by importance (lower = earlier)
_RANK = {
    "tt.dot": 0,
    "ttng.warp_group_dot": 0,
    "scf.for": 1,
    "scf.while": 1,
    "tt.load": 2,
    "ttg.async_copy_global_to_local": 2,
    "tt.descriptor_load": 2,
    "tt.store": 3,
    "tt.atomic_rmw": 3,
    "tt.atomic_cas": 3,
    "tt.reduce": 4,
    "tt.scan": 4,
    "scf.if": 5,
    "tt.print": 5,
    "tt.assert": 5,
    "ttg.convert_layout": 6,
    "ttg.local_alloc": 7,
    "ttng.warp_group_dot_wait": 8,
    "ttg.async_wait": 8,
    "gpu.barrier": 8,
    "math.exp": 9,
    "math.exp2": 9,
    "arith.divf": 9,
    "arith.extf": 10,
    "arith.truncf": 10,
}


def node_line(n: Node, extra: str = "") -> str:
    ref = f"[L{n.loc.line}]" if n.loc is not None else "[L?]"
    shape = "x".join(str(d) for d in n.shape)
    ty = " ".join(x for x in (n.dtype, shape) if x) if n.kind != "control" else ""
    loop = " in-loop" if n.loop is not None else ""
    return f"{ref} {n.op} {ty}{extra} -> {n.unit}{loop}".replace("  ", " ")


def build(
    kernel: str,
    target: str,
    num_warps: int,
    nodes: list[Node],
    extras: dict[int, str],
    findings: list[Finding],
    roofline: Roofline,
    header: list[str],
) -> tuple[str, int]:
    lines = [f"kernel {kernel} ({target}, {num_warps} warps)"] + header
    if roofline.bound != "unknown" and roofline.intensity is not None:
        lines.append(
            f"roofline: {roofline.bound}-bound, {roofline.intensity:.1f} FLOP/B (ridge "
            f"{roofline.ridge:.0f}), floor {roofline.floor_s * 1e6:.1f} us"
        )
    for f in findings[:6]:
        loc = f" @{f.locations[0]}" if f.locations else ""
        ev = f": {f.evidence[0]}" if f.evidence else ""
        gain = f" saves~{f.saves_s * 1e6:.0f}us" if f.saves_s is not None and f.saves_s >= 1e-6 else ""
        lines.append(f"! {f.severity} {f.pattern}{gain}{loc}{ev}"[:220])
    seen: set[tuple[str, int | None, str]] = set()
    cand = sorted(
        (n for n in nodes if n.op in _RANK), key=lambda n: (_RANK[n.op], 0 if n.loop is not None else 1, n.id)
    )
    body = []
    for n in cand:
        key = (n.op, n.loc.line if n.loc else None, n.dtype)
        if key in seen:
            continue
        seen.add(key)
        body.append(node_line(n, extras.get(n.id, "")))
    text = "\n".join(lines)
    # Lines are added while the running count stays in budget: the tokenizer's pre-tokens split at a
    # newline, so a line's count adds; the whole text is counted again at the end (and cut if need be).
    total = count_tokens(text)
    kept = [text]
    for b in body:
        n = count_tokens("\n" + b)
        if total + n > TOKEN_LIMIT:
            break
        kept.append(b)
        total += n
    text = truncate_lines("\n".join(kept), TOKEN_LIMIT)
    return text, count_tokens(text)
