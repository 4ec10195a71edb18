"""What the PTX reader's consumers get from every captured PTX text in the repo, as plain JSON data.

The texts: every `*.ptx` under tests/ (the decomposer corpus, Triton and CUDA C++ cases, and the
tests/fixtures captures). Per text: its entry names (the compile tool's CUDA path), the toolrunner's
per-location access widths (`ptx_access_bytes`, read by mem_access_profile), and for a corpus case with
no TTGIR (CUDA C++) the decomposer's whole record, which its PTX lane analysis drives (the Triton cases'
records are in tests/fixtures/ttgir/consumers.json.gz).

`python -m tests.parsers.ptx_snapshot` rewrites tests/fixtures/ptx_consumers.json.gz from the current code:
only after a reviewed, intended change of what a consumer reads (say which in the commit).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.parsers.ttgir_snapshot import REPO, TESTS, plain

SNAPSHOT = TESTS / "fixtures" / "ptx_consumers.json.gz"


def texts() -> list[Path]:
    return sorted(TESTS.rglob("*.ptx"))


def consumer_outputs_of(path: Path, entry_names: Callable[[str], list[str]], access_bytes: Callable[[str], dict],
                        decompose: Callable[[Any, Any], Any]) -> dict[str, Any]:
    from tests.decomposer import decomposer_corpus as corpus_io

    text = path.read_text()
    widths = sorted([f, line, col, b] for (f, line, col), b in access_bytes(text).items())
    entry: dict[str, Any] = {"entries": entry_names(text), "access_bytes": widths}
    if (path.parent / "meta.json").is_file() and not (path.parent / "kernel.ttgir").is_file():
        art, facts, _ = corpus_io.load(path.parent)
        entry["decompose"] = plain(decompose(art, facts))
    return entry


def consumer_outputs(entry_names: Callable[[str], list[str]], access_bytes: Callable[[str], dict],
                     decompose: Callable[[Any, Any], Any]) -> dict[str, dict]:
    return {str(p.relative_to(REPO)): consumer_outputs_of(p, entry_names, access_bytes, decompose) for p in texts()}


def read() -> dict[str, dict]:
    return json.loads(gzip.decompress(SNAPSHOT.read_bytes()))


def write(data: dict[str, dict]) -> None:
    SNAPSHOT.write_bytes(gzip.compress(json.dumps(data, sort_keys=True).encode(), mtime=0))


def main() -> None:
    from services.decomposer.decompose import decompose
    from shared.parsers.ptx import entry_names, ptx_access_bytes

    data = consumer_outputs(entry_names, ptx_access_bytes, decompose)
    write(data)
    print(f"{SNAPSHOT.relative_to(REPO)}: {len(data)} texts")


if __name__ == "__main__":
    main()
