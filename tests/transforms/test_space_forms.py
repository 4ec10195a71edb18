"""A transformation that adds a knob tunes it whatever form the task's SPACE takes: a list of configs
(autotune-style) grows every entry by the knob's values, and the CONFIG that counts is the last one (the
patcher appends a literal after a computed one). Pure: source in, source out."""

from __future__ import annotations

import ast
import re

from shared import space_list
from shared.transforms.base import Refused
from shared.transforms.table import apply
from tests.transforms.harness import ROOT

BMM = "benchmarks/tasks/l2_bmm.py"


def _top(source: str, name: str) -> object:
    """The value of the last module-level `name = <literal>`."""
    found = None
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            found = ast.literal_eval(node.value)
    return found


def _with_list_space(src: str) -> str:
    config = _top(src, "CONFIG")
    entries = [dict(config), {**config, "num_warps": 8}]  # type: ignore[arg-type]
    return re.sub(r"\nSPACE = \{.*?\n\}\n", f"\nSPACE = {entries!r}\n", src, count=1, flags=re.DOTALL)


def test_an_added_knob_multiplies_a_list_space() -> None:
    src = _with_list_space((ROOT / BMM).read_text())
    before = _top(src, "SPACE")
    assert isinstance(before, list) and len(before) == 2
    out = apply(src, "k_pipeline", {"stages": 3})
    assert not isinstance(out, Refused), out
    after = _top(out.source, "SPACE")
    assert after == space_list.with_knob(before, "LOOP_STAGES", [2, 3, 4, 5])
    assert not space_list.problems(_top(out.source, "CONFIG"), after)  # CONFIG is one of the listed configs


def test_the_last_config_assignment_is_the_one_a_transformation_edits() -> None:
    src = (ROOT / BMM).read_text()
    config = _top(src, "CONFIG")
    src += f"\nCONFIG = {dict(config, num_warps=8)!r}  # kpilot: the config this candidate runs\n"  # type: ignore[arg-type]
    out = apply(src, "k_pipeline", {"stages": 3})
    assert not isinstance(out, Refused), out
    last = _top(out.source, "CONFIG")
    assert last["num_warps"] == 8 and last["LOOP_STAGES"] == 3  # type: ignore[index]
