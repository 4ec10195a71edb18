"""The TTGIR parser's consumers read every captured TTGIR text as they did before the one parser (issue 19).

tests/fixtures/ttgir/consumers.json.gz was written from the two old readers (the decomposer's
services/decomposer/ttgir.py, the toolrunner's services/toolrunner/ttgir_memops.py) before they were
deleted: per text the decomposer's parsed module, the toolrunner's memory ops and, for corpus cases, the
whole decompose() record. See tests/parsers/ttgir_snapshot.py for the texts and how to regenerate.

Two reviewed changes from the old decomposer reader, both in the shared parser (issue 19 commits):
- oss_tutorial_layernorm_dw_lock: the old reader stopped at the scf.while's `} do {` and read no op after
  the lock loop; its module now has them and decompose() names the unlocking tt.atomic_rmw as well.
- 21 texts (20 corpus cases, one fixture): the old reader stripped `{...}` inside types, so an inline
  layout read `#ttg.slice<>` (1,518 strings in the modules, 275 in the decompose() records, e.g. node
  layouts); they now read `#ttg.slice<{dim = 1, parent = #blocked}>`. Every finding (pattern, line) and
  every other field is unchanged, and the toolrunner's memory ops equal the old reader's on all texts.
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
    got = {"module": snap.module_data(parse_ttgir(text)), "memory_ops": snap.plain(memory_ops(text))}
    if "decompose" in want:
        art, facts, _ = corpus_io.load(path.parent)
        got["decompose"] = snap.plain(decompose(art, facts))
    for key in want:
        assert got[key] == want[key], f"{key}: " + snap.first_difference(want[key], got[key])
