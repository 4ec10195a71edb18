"""What the TTGIR parser's consumers get from every captured TTGIR text in the repo, as plain JSON data.

The texts: every `*.ttgir` under tests/ (the decomposer corpus, tests/decomposer/corpus/*/kernel.ttgir,
captured by tests/decomposer/capture_corpus.py, and tests/fixtures/ttgir/, captured by
tests/fixtures/capture_ttgir.py). Per text: the decomposer's parsed module (`parse_ttgir`), the toolrunner's
global memory ops (`memory_ops`), and for a corpus case the decomposer's whole record (`decompose`).

`python -m tests.parsers.ttgir_snapshot` rewrites tests/fixtures/ttgir/consumers.json.gz from the current
code: only after a reviewed, intended change of what a consumer reads (say which in the commit).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
SNAPSHOT = TESTS / "fixtures" / "ttgir" / "consumers.json.gz"
OP_FIELDS_ADDED = ("locs", "source")  # Op fields the shared parser added (issue 19); not in the snapshot


def texts() -> list[Path]:
    return sorted(TESTS.rglob("*.ttgir"))


def plain(x: Any) -> Any:
    """JSON data (tuples as lists) of a msgspec Struct or a dataclass."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        x = dataclasses.asdict(x)
    return json.loads(msgspec.json.encode(x))


def module_data(mod: Any) -> dict:
    out = plain(mod)
    for op in out["ops"]:
        for k in OP_FIELDS_ADDED:
            op.pop(k, None)
    return out


def consumer_outputs(parse_module: Callable[[str], Any], memory_ops: Callable[[str], Any],
                     decompose: Callable[[Any, Any], Any]) -> dict[str, dict]:
    from tests.decomposer import decomposer_corpus as corpus_io

    out: dict[str, dict] = {}
    for path in texts():
        text = path.read_text()
        entry = {"module": module_data(parse_module(text)), "memory_ops": plain(memory_ops(text))}
        if (path.parent / "meta.json").is_file():
            art, facts, _ = corpus_io.load(path.parent)
            entry["decompose"] = plain(decompose(art, facts))
        out[str(path.relative_to(REPO))] = entry
    return out


def read() -> dict[str, dict]:
    return json.loads(gzip.decompress(SNAPSHOT.read_bytes()))


def write(data: dict[str, dict]) -> None:
    SNAPSHOT.write_bytes(gzip.compress(json.dumps(data, sort_keys=True).encode(), mtime=0))


def first_difference(a: Any, b: Any, path: str = "") -> str:
    """Where two JSON values first differ, as a path and both values (for a readable failure)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: only in {'snapshot' if k in a else 'current'}"
            if a[k] != b[k]:
                return first_difference(a[k], b[k], f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
        if len(a) != len(b):
            return f"{path}: {len(a)} items in the snapshot, {len(b)} now"
    return f"{path}: snapshot {str(a)[:300]!r}, now {str(b)[:300]!r}"


def main() -> None:
    from services.decomposer.decompose import decompose
    from shared.parsers.ttgir import parse_ttgir
    from shared.parsers.ttgir_memops import memory_ops

    data = consumer_outputs(parse_ttgir, memory_ops, decompose)
    write(data)
    print(f"{SNAPSHOT.relative_to(REPO)}: {len(data)} texts")


if __name__ == "__main__":
    main()
