"""source_checks: the candidate's harness is the task's, and it uses no capability the task does not.

Pure (source text in, reasons out); the funnel's use of both is covered by tests/verifier/test_cheats.py.
"""

from __future__ import annotations

from pathlib import Path

from services.verifier.source_checks import capability_findings, harness_changes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CHEATS = Path(__file__).resolve().parent / "cheats"
TASK = (EXAMPLES / "vector_add.py").read_text()


def test_a_task_against_itself_and_an_honest_candidate_have_no_findings() -> None:
    honest = (CHEATS / "honest_block1024.py").read_text()  # compact SHAPES, no constraint(): same harness
    for src in (TASK, honest):
        assert harness_changes(src, TASK) == []
        assert capability_findings(src, TASK) == []


def test_a_changed_benchmark_shape_or_make_inputs_is_a_harness_change() -> None:
    shrunk = TASK + '\nSHAPES["full"] = {"n": 1 << 20}\n'
    assert any(r.startswith("harness changed: SHAPES") for r in harness_changes(shrunk, TASK))
    other = TASK.replace("torch.randn(n, device=device, dtype=dtype))", "torch.ones(n, device=device, dtype=dtype))")
    assert any(r.startswith("harness changed: make_inputs") for r in harness_changes(other, TASK))
    # A helper the harness uses is part of it: changing DTYPE changes what make_inputs builds.
    assert any("DTYPE" in r for r in harness_changes(TASK.replace('DTYPE = "float32"', 'DTYPE = "float16"'), TASK))


def test_launch_and_config_changes_are_not_harness_changes() -> None:
    tuned = TASK.replace('"BLOCK": 128, "num_warps": 4', '"BLOCK": 1024, "num_warps": 8').replace(
        "out = torch.empty_like(x)", "out = torch.empty_like(x)  # tuned"
    )
    assert harness_changes(tuned, TASK) == []
    regrouped = TASK.replace("import torch\nimport triton\n", "import triton, torch\n")
    assert harness_changes(regrouped, TASK) == []
    # Patching an imported module is the honesty probe's monkey_patch finding; rebinding it is a change.
    assert harness_changes(TASK + "\ntorch.cuda.synchronize = print\n", TASK) == []
    assert any("torch" in r for r in harness_changes(TASK + "\ntorch = None\n", TASK))


def test_each_kind_of_capability_is_named_with_its_line() -> None:
    extra = {
        "import os\n": "source: imports os (line",
        "from sys import modules\n": "source: imports sys",
        "import torch.library\n": "source: imports torch.library",
        "f = open\nf('x')\n": "source: uses open (line",  # an alias is a use too
        "exec('1')\n": "source: uses exec",
        "flag = torch.cuda.is_current_stream_capturing()\n": "source: uses .is_current_stream_capturing",
        "flag = getattr(torch, '_C')\n": "source: uses ._C",
        "class Hook:\n    def __del__(self):\n        pass\n": "source: defines __del__",
    }
    for code, marker in extra.items():
        reasons = capability_findings(TASK + "\n" + code, TASK)
        assert any(r.startswith(marker) for r in reasons), (code, reasons)


def test_what_the_task_itself_uses_is_not_held_against_the_candidate() -> None:
    task = TASK.replace("import torch\n", "import os\nimport torch\n")
    assert capability_findings(task, task) == []
    assert capability_findings(task + "\nimport os\n", task)  # a second, new use is


def test_a_file_that_does_not_parse_is_left_to_the_compile_tool() -> None:
    assert harness_changes("def (:", TASK) == [] and capability_findings("def (:", TASK) == []
