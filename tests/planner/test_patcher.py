"""The deterministic patcher on the real example tasks (examples/*.py), parsed, never imported."""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

import pytest

from services.planner.patcher import CandidateVersion, PatchRejected, apply_changes, make_candidate
from shared.messages import ChangeDescription as C

ROOT = Path(__file__).resolve().parents[2]
MATMUL = ROOT / "examples" / "matmul.py"
ADD = ROOT / "examples" / "vector_add.py"


def _line(src: str, needle: str) -> int:
    return next(i for i, line in enumerate(src.splitlines(), 1) if needle in line)


def _config(src: str) -> dict:
    tree = ast.parse(src)
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "CONFIG")
    return ast.literal_eval(node.value)


def test_config_changes_rewrite_config_into_a_content_addressed_file(tmp_path: Path) -> None:
    src = MATMUL.read_text()
    changes = [
        C(change="set_constexpr", target="BLOCK_M", value=128),
        C(change="set_constexpr", target="BLOCK_N", value=256),
        C(change="set_constexpr", target="BLOCK_K", value=64),
        C(change="set_constexpr", target="GROUP_M", value=8),
        C(change="set_num_warps", value=8),
        C(change="set_num_stages", value=4),
    ]
    cand = make_candidate(tmp_path, str(MATMUL), src, changes, version=1)
    assert isinstance(cand, CandidateVersion), cand
    text = Path(cand.path).read_text()
    assert Path(cand.path) == tmp_path / cand.sha256 / "task.py"
    assert hashlib.sha256(text.encode()).hexdigest() == cand.sha256
    want = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 4}
    assert _config(text) == want == cand.config
    # Only the CONFIG line changed, and the diff says so.
    changed = [d for d in cand.diff.splitlines() if d[:1] in "+-" and not d.startswith(("+++", "---"))]
    assert len(changed) == 2 and changed[0].startswith("-CONFIG") and changed[1].startswith("+CONFIG")
    assert cand.parent_sha256 == hashlib.sha256(src.encode()).hexdigest()
    # Same changes again: same bytes, same directory (write-once, content-addressed).
    again = make_candidate(tmp_path, str(MATMUL), src, changes, version=1)
    assert isinstance(again, CandidateVersion) and again.path == cand.path


def test_maxnreg_added_because_launch_accepts_it(tmp_path: Path) -> None:
    got = apply_changes(MATMUL.read_text(), [C(change="set_maxnreg", value=128)])
    assert not isinstance(got, PatchRejected), got
    assert got[1]["maxnreg"] == 128


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (C(change="set_constexpr", target="BLOCK_Q", value=64), "not a constexpr of CONFIG"),
        (C(change="set_constexpr", target="BLOCK_M", value=96), "outside the task's SPACE"),
        (C(change="set_num_warps", value=6), "power of two"),
        (C(change="set_num_stages", value=0), "from 1 to"),
        (C(change="set_maxnreg", value=300), "from 24 to 255"),
    ],
)
def test_bad_config_changes_are_structured_errors(change: C, fragment: str) -> None:
    got = apply_changes(MATMUL.read_text(), [C(change="set_num_warps", value=8), change])
    assert isinstance(got, PatchRejected)
    assert [e.change_index for e in got.errors] == [1]
    assert fragment in got.errors[0].reason


def test_out_of_space_value_names_the_nearest_allowed() -> None:
    got = apply_changes(MATMUL.read_text(), [C(change="set_constexpr", target="BLOCK_M", value=100)])
    assert isinstance(got, PatchRejected) and got.errors[0].nearest == "128"
    typo = apply_changes(MATMUL.read_text(), [C(change="set_constexpr", target="BLOCK_MM", value=64)])
    assert isinstance(typo, PatchRejected) and typo.errors[0].nearest == "BLOCK_M"


def test_source_edit_anchored_to_a_line() -> None:
    src = MATMUL.read_text()
    line = _line(src, "acc = tl.dot(a, b, acc)")
    edit = C(
        change="source_edit",
        target=f"{MATMUL}:{line}",
        search="acc = tl.dot(a, b, acc)",
        replace='acc = tl.dot(a, b, acc, input_precision="ieee")',
    )
    got = apply_changes(src, [edit, C(change="set_num_stages", value=3)])
    assert not isinstance(got, PatchRejected), got
    out, cfg = got
    assert 'input_precision="ieee"' in out.splitlines()[line - 1] and cfg["num_stages"] == 3


def test_source_edit_not_found_reports_the_nearest_match() -> None:
    src = MATMUL.read_text()
    line = _line(src, "acc = tl.dot(a, b, acc)")
    edit = C(change="source_edit", target=f"L{line}", search="acc = tl.dot(a, b, accum)", replace="x")
    got = apply_changes(src, [edit])
    assert isinstance(got, PatchRejected)
    err = got.errors[0]
    assert "not found" in err.reason and err.nearest.strip() == "acc = tl.dot(a, b, acc)"
    assert err.nearest_line == line


def test_source_edit_far_from_anchor_and_ambiguous_search_are_refused() -> None:
    src = MATMUL.read_text()
    far = apply_changes(
        src, [C(change="source_edit", target="L1", search="acc = tl.dot(a, b, acc)", replace="x")]
    )
    assert isinstance(far, PatchRejected) and "not within" in far.errors[0].reason
    many = apply_changes(src, [C(change="source_edit", search="BLOCK_K", replace="BK")])
    assert isinstance(many, PatchRejected) and "times" in many.errors[0].reason


def test_edit_that_breaks_syntax_is_refused() -> None:
    src = MATMUL.read_text()
    line = _line(src, "c = acc.to(")
    got = apply_changes(
        src, [C(change="source_edit", target=str(line), search="c = acc.to(", replace="c = acc.to((")]
    )
    assert isinstance(got, PatchRejected) and "does not parse" in got.errors[0].reason


def test_overlapping_edits_are_refused() -> None:
    src = MATMUL.read_text()
    line = _line(src, "acc = tl.dot(a, b, acc)")
    a = C(change="source_edit", target=str(line), search="acc = tl.dot(a, b, acc)", replace="x = 1")
    b = C(change="source_edit", target=str(line), search="tl.dot(a, b, acc)", replace="y")
    got = apply_changes(src, [a, b])
    assert isinstance(got, PatchRejected) and "overlaps" in got.errors[0].reason


def test_hints_multiple_of_and_eviction_policy() -> None:
    src = ADD.read_text()
    offs_line = _line(src, "offs =")
    load_line = _line(src, "tl.load(x_ptr")
    changes = [
        C(change="add_hint", hint="multiple_of", target=f"L{offs_line}", search="offs", value="BLOCK"),
        C(change="add_hint", hint="eviction_policy", target=f"L{load_line}", value="evict_first"),
    ]
    got = apply_changes(src, changes)
    assert not isinstance(got, PatchRejected), got
    lines = got[0].splitlines()
    indent = src.splitlines()[offs_line - 1].split("offs")[0]
    assert lines[offs_line] == f"{indent}offs = tl.multiple_of(offs, BLOCK)"
    assert 'eviction_policy="evict_first")' in lines[load_line]  # shifted one line by the insertion


def test_hint_on_a_line_without_the_variable_is_refused() -> None:
    src = ADD.read_text()
    got = apply_changes(
        src, [C(change="add_hint", hint="max_contiguous", target="L1", search="offs", value=16)]
    )
    assert isinstance(got, PatchRejected)


def test_set_grid_rewrites_the_grid_assignment() -> None:
    src = MATMUL.read_text()
    expr = "(triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))"
    got = apply_changes(src, [C(change="set_grid", value=expr)])
    assert not isinstance(got, PatchRejected), got
    assert f"grid = {expr}" in got[0]
    bad = apply_changes(src, [C(change="set_grid", value="(1,")])
    assert isinstance(bad, PatchRejected) and "expression" in bad.errors[0].reason
