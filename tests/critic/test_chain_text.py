"""The change link of an evidence chain names what was changed. H200 run r39's verified block-sparse patch
read `change: v1 of block_sparse_attn_kernel: transform=None`: the text knew only target=value."""

from __future__ import annotations

from services.critic.chain import change_text
from shared.messages import Candidate, ChangeDescription


def candidate(*changes: ChangeDescription) -> Candidate:
    return Candidate(source="planner", kernel="k", task_path="t.py", version=1, changes=list(changes))


def test_a_transformation_is_named_with_its_parameters() -> None:
    c = candidate(
        ChangeDescription(change="transform", transform="split_k", params={"SPLIT": 4, "ORDER": "fixed"}),
        ChangeDescription(change="transform", transform="sparse_block_skip"),
    )
    assert change_text(c) == "transform split_k(ORDER=fixed, SPLIT=4), transform sparse_block_skip"


def test_knobs_edits_and_an_empty_change_list_read_as_before() -> None:
    c = candidate(
        ChangeDescription(change="set_constexpr", target="BLOCK_M", value=64),
        ChangeDescription(change="set_num_warps", value=8),
        ChangeDescription(change="source_edit", target="task.py:27"),
    )
    assert change_text(c) == "set_constexpr BLOCK_M=64, set_num_warps 8, source_edit at task.py:27"
    assert change_text(candidate()) == "no change descriptions"
