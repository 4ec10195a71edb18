"""SPACE given as a list of configs (autotune-style) besides the dict cross product: the loader's checks
(each problem names the fix), the manifest's two views of it and the expansion the autotune tool uses."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from services.toolrunner.tasks import TaskError, load_task
from services.toolrunner.tools.autotune.config_space import expand
from shared.space_list import domains, points, problems

CONFIG = {"BLOCK": 128, "num_warps": 4, "num_stages": 1}
LISTED = [{"BLOCK": 128, "num_warps": 4}, {"BLOCK": 256, "num_warps": 8}, {"BLOCK": 1024, "num_warps": 8}]

_TASK = """
    import torch, triton, triton.language as tl

    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        pass

    KERNELS = (k,)
    CONFIG = {"BLOCK": 128, "num_warps": 4, "num_stages": 1}
    SPACE = SPACE_HERE
    SHAPES = {"micro": {"n": 10}, "full": {"n": 1000}, "edge": [{"n": 1}]}
    DTYPE = "float32"
    TOLERANCE = {"float32": [0.0, 0.0]}
    PRECISION = "exact"
    def make_inputs(shape, seed, device): return (torch.zeros(shape["n"]),)
    def launch(inputs, **config): return inputs[0]
    def reference(inputs): return inputs[0]
    def flops(shape): return 1.0
    def bytes_moved(shape): return 8.0 * shape["n"]
"""


def _task(tmp_path: Path, space: str) -> Path:
    p = tmp_path / "listed.py"
    p.write_text(textwrap.dedent(_TASK).replace("SPACE_HERE", space))
    return p


def test_the_views_of_a_list() -> None:
    assert points(CONFIG, LISTED)[1] == {"BLOCK": 256, "num_warps": 8, "num_stages": 1}
    assert domains(LISTED) == {"BLOCK": [128, 256, 1024], "num_warps": [4, 8]}
    assert problems(CONFIG, LISTED) == []


def test_list_problems_name_the_fix() -> None:
    bad = problems(CONFIG, [{"BLOCK": 128}, {"BLOK": 256}, 7])
    assert "entry 1 has keys ['BLOK'] that are not in CONFIG" in bad[0] and "add them to CONFIG" in bad[0]
    assert bad[1].startswith("entry 2 is 7, not a non-empty dict")
    missing = problems(CONFIG, [{"BLOCK": 256, "num_warps": 8}])
    assert missing == [("CONFIG is none of the listed configs; add an entry with CONFIG's values, "
                       "{'BLOCK': 128, 'num_warps': 4}")]
    assert "an empty list allows no config" in problems(CONFIG, [])[0]


def test_expand_takes_a_list_in_its_order_and_applies_the_constraint() -> None:
    got = expand(CONFIG, LISTED, lambda c, s: c["BLOCK"] <= s["n"], {"n": 512})
    assert got == [{"BLOCK": 128, "num_warps": 4, "num_stages": 1}, {"BLOCK": 256, "num_warps": 8, "num_stages": 1}]
    assert len(expand(CONFIG, {"BLOCK": [128, 256], "num_warps": [4, 8]})) == 4  # the product as before


def test_a_list_space_loads_with_its_entries(tmp_path: Path) -> None:
    m = load_task(_task(tmp_path, repr(LISTED)))
    assert m.space_configs == LISTED
    assert m.space == {"BLOCK": [128, 256, 1024], "num_warps": [4, 8]}
    assert m.configs_listed()[2] == {"BLOCK": 1024, "num_warps": 8, "num_stages": 1}


@pytest.mark.parametrize(("space", "needles"), [
    ('[{"BLOCK": 128, "num_warps": 4}, {"BLOK": 256}, "BLOCK=256"]',
     ["SPACE: entry 1 has keys ['BLOK'] that are not in CONFIG", "SPACE: entry 2 is 'BLOCK=256', not a"]),
    ('[{"BLOCK": 256}]', [("SPACE: CONFIG is none of the listed configs; add an entry with CONFIG's values, "
                          "{'BLOCK': 128}")]),
])
def test_a_wrong_list_space_is_refused_naming_the_fix(tmp_path: Path, space: str, needles: list[str]) -> None:
    with pytest.raises(TaskError) as info:
        load_task(_task(tmp_path, space))
    got = info.value.problems
    assert len(got) == len(needles), got
    for needle, problem in zip(needles, got, strict=True):
        assert problem.startswith(needle) and "; expected: " in problem and "a list of configs" in problem


def test_a_new_knob_crosses_every_entry() -> None:
    from shared.space_list import with_knob

    got = with_knob(LISTED[:2], "SPLIT_K", [1, 2])
    assert got == [{"BLOCK": 128, "num_warps": 4, "SPLIT_K": 1}, {"BLOCK": 128, "num_warps": 4, "SPLIT_K": 2},
                   {"BLOCK": 256, "num_warps": 8, "SPLIT_K": 1}, {"BLOCK": 256, "num_warps": 8, "SPLIT_K": 2}]
    assert problems({**CONFIG, "SPLIT_K": 1}, got) == []
