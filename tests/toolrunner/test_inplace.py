"""Declared in-place outputs (INPLACE): the loader checks the declaration, correctness compares the
written input with the reference's value and flags only undeclared writes, and the timing restores the
declared inputs before every timed call (TaskCall.restore; Bench calls it outside the events)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from services.toolrunner.tasks import TaskError, load_task
from services.toolrunner.tools.run_correctness.spec import run
from services.toolrunner.worker_lib.task_call import prepare
from services.toolrunner.worker_lib.tensors import call_outputs, declared_indices, inplace_problem
from shared.tools.run import RunCorrectnessInput

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
TASK = FIX / "add_inplace_declared.py"


def _check(candidate: str | None = None, task: Path = TASK):
    return run(RunCorrectnessInput(task_path=str(task), candidate_path=str(FIX / candidate) if candidate else None,
                                   device="cpu", shapes=["micro", "edge"], seeds=[0]))


def test_the_manifest_carries_inplace() -> None:
    assert load_task(TASK).inplace == [0]


def test_a_declared_in_place_launch_passes_against_the_reference() -> None:
    out = _check()
    assert out.passed, out.summary
    assert not any(c.candidate_modified_inputs for c in out.cases)  # the declared write is the output
    assert all(len(c.outputs) == 1 for c in out.cases)
    assert "in-place outputs: inputs [0] after the call are compared (INPLACE)" in out.notes


def test_a_wrong_value_written_in_place_fails() -> None:
    out = _check("add_inplace_wrong.py")
    assert not out.passed
    assert all(c.status == "fail" and c.reason.startswith("output 0:") for c in out.cases if c.shape["n"] > 0)


def test_a_write_outside_the_declared_inputs_is_still_flagged() -> None:
    out = _check("add_inplace_undeclared_write.py")
    assert any(c.candidate_modified_inputs for c in out.cases)
    assert "the candidate wrote into inputs other than the declared INPLACE [0]" in out.notes


@pytest.mark.parametrize(("decl", "needle"), [
    ("INPLACE = 0", "INPLACE: 0 is an int, not a tuple of them (write INPLACE = (0,))"),
    ('INPLACE = ("x",)', "INPLACE: ('x',) is not a tuple of input indices (names are not accepted"),
])
def test_a_wrong_declaration_is_refused_with_the_fix(tmp_path: Path, decl: str, needle: str) -> None:
    p = tmp_path / "t.py"
    p.write_text(TASK.read_text().replace("INPLACE = (0,)", decl))
    with pytest.raises(TaskError) as info:
        load_task(p)
    (problem,) = info.value.problems
    assert problem.startswith(needle) and "; expected: INPLACE = (0,)" in problem


def test_an_index_past_the_inputs_is_named_by_the_case() -> None:
    import torch

    x, y = torch.zeros(3), torch.zeros(3)
    assert inplace_problem((2,), (x, y)) == "INPLACE index 2 is out of range: make_inputs returned 2 inputs " \
        "(indices 0..1)"
    assert inplace_problem((1,), (x, 3)) == "INPLACE index 1 is a int, not a tensor launch() can write"


def test_the_outputs_of_an_in_place_call() -> None:
    import torch

    x, y, out = torch.ones(2), torch.zeros(2), torch.full((2,), 5.0)
    assert call_outputs(None, (x, y), (0,), "launch") == [x]
    got = call_outputs((x, out), (x, y), (0,), "launch")  # returning the written input does not count twice
    assert got is not None and len(got) == 2 and got[0] is x and got[1] is out
    assert call_outputs(out, (x, y), (0,), "reference") == [out]  # the expected value, returned
    assert call_outputs(None, (x, y), (0,), "reference") == [x]  # or written into its own copy
    assert call_outputs(None, (x, y), (), "launch") is None  # without INPLACE nothing is no output
    assert declared_indices((x, y, y), (1,)) == [1, 2]  # f(x, y, y) in place: y's alias is declared too
    assert declared_indices((x, y, y), ()) == []


_TORCH_TASK = """
    import torch
    INPLACE = (0,)
    CONFIG = {"SCALE": 2}
    SHAPES = {"micro": {"n": 4}, "full": {"n": 4}, "edge": [{"n": 1}]}
    def make_inputs(shape, seed, device):
        torch.manual_seed(seed)
        return (torch.randn(shape["n"], device=device), torch.randn(shape["n"], device=device))
    def launch(inputs, SCALE):
        inputs[0].add_(inputs[1] * SCALE)
    def reference(inputs):
        return inputs[0] + 2 * inputs[1]
"""


def test_restore_puts_the_declared_inputs_back_between_calls(tmp_path: Path) -> None:
    p = tmp_path / "acc.py"
    p.write_text(textwrap.dedent(_TORCH_TASK))
    call = prepare(str(p), "micro", {}, seed=0, device="cpu")
    start = call.inputs[0].clone()
    call()
    once = call.inputs[0].clone()
    call()
    assert not call.inputs[0].equal(once)  # a second call without restoring accumulates again
    call.restore()
    assert call.inputs[0].equal(start)
    call()
    assert call.inputs[0].equal(once)  # restored: every timed call runs on make_inputs' values
