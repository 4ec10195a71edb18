"""Before the switch (issue 19): the old TTGIR readers and shared/parsers/ttgir*.py on every captured text.

The decomposer's services/decomposer/ttgir.py + layouts.py and the toolrunner's
services/toolrunner/ttgir_memops.py against shared/parsers/ttgir.py (parse_ttgir, decode_layouts) and
shared/parsers/ttgir_memops.py (memory_ops), on all the repo's *.ttgir texts, for what each consumer reads.
"""

from __future__ import annotations

import pytest

from services.decomposer import layouts as old_layouts
from services.decomposer import ttgir as old_ttgir
from services.toolrunner import ttgir_memops as old_memops
from shared.parsers import ttgir as new_ttgir
from shared.parsers import ttgir_memops as new_memops
from tests.parsers import ttgir_snapshot as snap

TEXTS = snap.texts()
# The old decomposer reader took `} do {` (an scf.while's second region) for the function's end and read no
# op after the first scf.while; the shared parser reads on (the toolrunner's line scan always did).
WHILE_CASE = "tests/decomposer/corpus/oss_tutorial_layernorm_dw_lock/kernel.ttgir"


def test_every_captured_ttgir_text_is_compared() -> None:
    assert len(TEXTS) >= 89
    assert sum(1 for p in TEXTS if "corpus" in p.parts) >= 85


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: p.parent.name)
def test_old_and_new_readers_agree(path) -> None:
    text = path.read_text()
    rel = str(path.relative_to(snap.REPO))
    old_mod, new_mod = old_ttgir.parse_ttgir(text), new_ttgir.parse_ttgir(text)
    old, new = snap.module_data(old_mod), snap.module_data(new_mod)
    if rel == WHILE_CASE:
        n = len(old["ops"])
        assert [o["name"] for o in new["ops"][:n]] == [o["name"] for o in old["ops"]]
        assert old["ops"][-1]["name"] == "scf.yield" and new["ops"][n - 1]["name"] == "scf.yield"
        assert [o["name"] for o in new["ops"][n:]] == [
            "tt.load", "arith.addf", "tt.store", "tt.atomic_rmw", "tt.return"]
    else:
        assert old == new, snap.first_difference(old, new)
    assert snap._plain(old_layouts.decode_all(old_mod.layouts)) == snap._plain(
        new_ttgir.decode_layouts(new_mod.layouts))
    old_ir, new_ir = snap._plain(old_memops.parse_ttgir(text)), snap._plain(new_memops.memory_ops(text))
    assert old_ir == new_ir, snap.first_difference(old_ir, new_ir)
