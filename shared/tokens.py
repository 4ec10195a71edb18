"""The prompt token-count rule, shared by the decomposer (IR summary) and the planner (its context).

Token rule (no tokenizer is bundled offline): every run of word characters counts ceil(len / 4) tokens,
every other non-space character one token. BPE tokenizers (cl100k, o200k) merge at least that much on this
kind of text, so the count is an upper bound for them.
"""

from __future__ import annotations

import math
import re

TOKEN_LIMIT = 750  # DESIGN.md: IR summary <= 750 tokens in the planner's context
TOKEN_RULE = "tokens = sum(ceil(len(w)/4) for each \\w+ run) + 1 per other non-space char (upper bound)"
_PIECE = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    return sum(math.ceil(len(p) / 4) if p[0].isalnum() or p[0] == "_" else 1 for p in _PIECE.findall(text))


def truncate_lines(text: str, limit: int = TOKEN_LIMIT) -> str:
    """`text` less whole trailing lines until it counts <= `limit` tokens (a single line is kept whole)."""
    while count_tokens(text) > limit and "\n" in text:
        text = text.rsplit("\n", 1)[0]
    return text
