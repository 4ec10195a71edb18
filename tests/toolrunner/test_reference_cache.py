"""The reference side of run_correctness and honesty_probe runs once per task file and case: the second
candidate of a job spawns only its own processes, a changed task file or a new case runs the reference
again, and no candidate finds a kept output. CPU, Triton's interpreter, the real sandbox."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from services.toolrunner import reference_cache
from services.toolrunner.tools.honesty_probe import spec as honesty
from services.toolrunner.tools.run_correctness import spec as correctness
from shared.tools.honesty import HonestyInput
from shared.tools.run import RunCorrectnessInput

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "examples" / "vector_add.py"

Spawn = tuple[str, str, int]  # (worker, role, cases or seeds asked for)


@pytest.fixture
def spawns(monkeypatch: pytest.MonkeyPatch) -> list[Spawn]:
    """A fresh cache for this test, and every sandboxed worker the two tools start."""
    monkeypatch.setattr(reference_cache, "_default", reference_cache.ReferenceCache())
    seen: list[Spawn] = []

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        def recorded(module: str, request: bytes, *a: Any, **kw: Any) -> Any:
            req = json.loads(request)
            seen.append((module.split(".")[-2], req["role"], len(req.get("cases") or req["seeds"])))
            return original(module, request, *a, **kw)

        return recorded

    monkeypatch.setattr(correctness, "run_worker", wrap(correctness.run_worker))
    monkeypatch.setattr(honesty, "run_worker", wrap(honesty.run_worker))
    return seen


def _correctness(config: dict[str, int], task: Path = TASK, seeds: tuple[int, ...] = (0, 1)) -> Any:
    return correctness.run(RunCorrectnessInput(task_path=str(task), config=config, shapes=["micro", "edge"],
                                               seeds=list(seeds), device="cpu"))


def test_second_candidate_of_a_task_runs_no_reference_process(spawns: list[Spawn]) -> None:
    first = _correctness({"BLOCK": 256})
    assert first.passed, first.summary
    assert spawns == [("run_correctness", "candidate", 6), ("run_correctness", "reference", 6)]
    spawns.clear()
    second = _correctness({"BLOCK": 512, "num_warps": 2})
    assert second.passed, second.summary
    assert spawns == [("run_correctness", "candidate", 6)]  # the reference's 6 cases were kept
    assert [c.outputs[0].mismatches for c in second.cases] == [0] * 6
    assert any(n.startswith("reference outputs of 6/6 cases reused") for n in second.notes)
    assert second.device == first.device

    spawns.clear()
    outs = [honesty.run(HonestyInput(task_path=str(TASK), config=cfg, seeds=[11, 12], device="cpu"))
            for cfg in ({"BLOCK": 256}, {"BLOCK": 512})]
    assert all(o.passed for o in outs), [o.summary for o in outs]
    # reference then candidate for the first, only the candidate for the second
    assert spawns == [("honesty_probe", "reference", 2), ("honesty_probe", "candidate", 2), ("honesty_probe", "candidate", 2)]
    assert outs[1].reference_ops == outs[0].reference_ops == ["aten.add"]  # kept with the outputs


def test_changed_task_file_or_new_seed_runs_the_reference_again(spawns: list[Spawn], tmp_path: Path) -> None:
    task = tmp_path / "vector_add.py"
    task.write_text(TASK.read_text())
    assert _correctness({"BLOCK": 256}, task).passed
    spawns.clear()
    assert _correctness({"BLOCK": 256}, task, seeds=(0, 1, 2)).passed
    assert spawns == [("run_correctness", "candidate", 9), ("run_correctness", "reference", 3)]  # seed 2 only

    spawns.clear()
    task.write_text(TASK.read_text() + "\n# edited: another file, another key\n")
    assert _correctness({"BLOCK": 256}, task).passed
    assert spawns == [("run_correctness", "candidate", 6), ("run_correctness", "reference", 6)]


# Appended to a copy of the task: a launch that returns a reference output of its shape if it finds one
# under the runner's temp dir (where the tools keep their work), zeros otherwise.
READS_KEPT = """

import os

import numpy as np


def launch(inputs, BLOCK, num_warps, num_stages):
    x = inputs[0]
    for root, _, files in os.walk({top!r}):
        for f in files:
            if f.endswith(".npy"):
                try:
                    arr = np.load(os.path.join(root, f))
                except Exception:
                    continue
                if arr.shape == tuple(x.shape):
                    return torch.from_numpy(arr)
    return torch.zeros_like(x)
"""


@pytest.mark.parametrize("unconfined", [False, True], ids=["sandboxed", "unconfined"])
def test_a_candidate_finds_no_kept_reference_output(
    spawns: list[Spawn], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unconfined: bool
) -> None:
    """Kept outputs live in the runner's memory: not even an unconfined worker (same uid, same /tmp) can
    read one."""
    top = tmp_path / "tmp"  # the runner's temp dir for this test: no other test's files in it
    top.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(top))
    assert _correctness({"BLOCK": 256}, seeds=(0,)).passed  # one kept output of the micro shape
    if unconfined:
        from services.toolrunner import confinement, sandbox

        mode = confinement.Confinement(mode="unconfined", bwrap=None, reason="test",
                                       layers=confinement.layers_for("unconfined", "test"))
        monkeypatch.setattr(sandbox.confinement, "probe", lambda: mode)
    cheat = tmp_path / "reads_kept.py"
    cheat.write_text(TASK.read_text() + READS_KEPT.format(top=str(top)))
    out = correctness.run(RunCorrectnessInput(task_path=str(TASK), candidate_path=str(cheat), shapes=["micro"],
                                              seeds=[0], device="cpu"))
    assert spawns[-1] == ("run_correctness", "candidate", 1)  # the reference was kept, not run again
    assert not out.passed and out.cases[0].status == "fail", out.summary
