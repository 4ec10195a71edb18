"""The PTX reader's consumers read every captured PTX text as they did before the one reader (issue 19).

tests/fixtures/ptx_consumers.json.gz was written before the switch, from the compile worker's own
`.entry` regex, the toolrunner's line scan in ptx_access_bytes and the decomposer's own PTX reader in
services/decomposer/ptx_lanes.py: per text the entry names, the access widths per location and, for the
CUDA C++ corpus cases, the whole decompose() record. See tests/parsers/ptx_snapshot.py.
"""

from __future__ import annotations

import pytest

from services.decomposer.decompose import decompose
from shared.parsers.ptx import entry_names, ptx_access_bytes, read_entry
from tests.parsers import ptx_snapshot as snap
from tests.parsers.ttgir_snapshot import first_difference

SNAPSHOT = snap.read()
TEXTS = snap.texts()


def test_the_snapshot_covers_every_captured_text() -> None:
    assert sorted(SNAPSHOT) == [str(p.relative_to(snap.REPO)) for p in TEXTS]
    assert len(SNAPSHOT) >= 136 and sum("decompose" in v for v in SNAPSHOT.values()) >= 42


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_consumers_read_the_text_as_before(path) -> None:
    key = str(path.relative_to(snap.REPO))
    got = snap.consumer_outputs_of(path, entry_names, ptx_access_bytes, decompose)
    want = SNAPSHOT[key]
    for k in want:
        assert got[k] == want[k], f"{k}: " + first_difference(want[k], got[k])


def test_an_inlined_call_keeps_both_locations() -> None:
    ptx = ('.file 1 "/k.cu"\n.visible .entry k(\n.param .u64 p\n)\n.maxntid 128, 1, 1\n{\n'
           ".loc 1 40 3, function_name $L__info, inlined_at 1 12 9\n"
           "ld.global.v2.f32 {%f1, %f2}, [%rd1];\n}\n")
    e = read_entry(ptx)
    (ins,) = e.instrs
    assert (e.name, e.maxntid, ins.opcode, ins.operands) == ("k", (128, 1, 1), "ld.global.v2.f32",
                                                            ("{%f1, %f2}", "[%rd1]"))
    assert (ins.file, ins.line, ins.at) == ("/k.cu", 12, ("/k.cu", 40, 3))  # caller's line; the .loc's own
    assert ptx_access_bytes(ptx) == {("/k.cu", 40, 3): 8}
    with pytest.raises(ValueError, match="no .entry 'nope'"):
        read_entry(ptx, "nope")
