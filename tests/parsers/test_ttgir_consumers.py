"""The TTGIR parser's consumers read every captured TTGIR text as they did before the one parser (issue 19).

tests/fixtures/ttgir/consumers.json.gz was written from the two old readers (the decomposer's
services/decomposer/ttgir.py, the toolrunner's services/toolrunner/ttgir_memops.py) before they were
deleted: per text the decomposer's parsed module, the toolrunner's memory ops and, for corpus cases, the
whole decompose() record. See tests/parsers/ttgir_snapshot.py for the texts and how to regenerate.

One entry is the shared parser's reading, not the old decomposer's: oss_tutorial_layernorm_dw_lock's module,
where the old reader stopped at the scf.while's `} do {` (tests/parsers/test_ttgir_old_new.py, issue 19
commit history, shows both).
"""

from __future__ import annotations

import pytest

from services.decomposer.decompose import decompose
from shared.parsers.ttgir import parse_ttgir
from shared.parsers.ttgir_memops import memory_ops
from tests.decomposer import decomposer_corpus as corpus_io
from tests.parsers import ttgir_snapshot as snap

SNAPSHOT = snap.read()
TEXTS = snap.texts()


def test_the_snapshot_covers_every_captured_text() -> None:
    assert sorted(SNAPSHOT) == [str(p.relative_to(snap.REPO)) for p in TEXTS]
    assert len(SNAPSHOT) >= 89 and sum("decompose" in v for v in SNAPSHOT.values()) >= 85


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: p.parent.name)
def test_consumers_read_the_text_as_before(path) -> None:
    want = SNAPSHOT[str(path.relative_to(snap.REPO))]
    text = path.read_text()
    got = {"module": snap.module_data(parse_ttgir(text)), "memory_ops": snap._plain(memory_ops(text))}
    if "decompose" in want:
        art, facts, _ = corpus_io.load(path.parent)
        got["decompose"] = snap._plain(decompose(art, facts))
    for key in want:
        assert got[key] == want[key], f"{key}: " + snap.first_difference(want[key], got[key])
