"""A rewrite keeps the file's layout: applied to every example and suite task it fits, no line it adds
ends in whitespace (a moved argument once carried the newline before `)` into the middle of the call)."""

from __future__ import annotations

from shared.transforms.base import Refused
from shared.transforms.table import TABLE, apply
from tests.transforms.harness import ROOT

TASKS = sorted([*ROOT.glob("examples/*.py"), *ROOT.glob("benchmarks/tasks/l*.py")])


def test_no_added_line_ends_in_whitespace() -> None:
    applied, bad = 0, []
    for path in TASKS:
        src = path.read_text()
        for t in TABLE:
            out = apply(src, t.spec.name)
            if isinstance(out, Refused):
                continue
            applied += 1
            bad += [f"{path.name} {t.spec.name}: {ln!r}" for ln in out.diff.splitlines()
                    if ln.startswith("+") and not ln.startswith("+++") and ln != ln.rstrip()]
    assert applied >= 20, applied  # the check saw real rewrites
    assert not bad, "\n".join(bad)
