"""The honesty worker's state and provenance watchers, in process: module_state sees what a launch keeps
between calls, and the op recorder knows which outputs a torch op computed (workers/honesty.py, tricks.py).
The worker's use of both is covered by tests/verifier/test_cheats.py (content_key_cache, call_counter,
disguised_torch_ops)."""

from __future__ import annotations

import types
from pathlib import Path

import torch

from services.toolrunner.tools.honesty_probe.worker import module_state
from services.toolrunner.tricks import op_recorder


def _module(code: str) -> types.ModuleType:
    m = types.ModuleType("kpilot_task_state_probe")
    exec(compile(code, "<task>", "exec"), m.__dict__)  # noqa: S102 - test code
    return m


def test_a_memo_a_counter_and_a_mutable_default_change_module_state() -> None:
    for code, call in (
        ("_memo = {}\ndef launch(k):\n    _memo[k] = k\n", "launch"),
        ("_n = [0]\ndef launch(k):\n    _n[0] += 1\n", "launch"),
        ("def launch(k, _seen={}):\n    _seen[k] = 1\n", "launch"),
        ("def launch(k):\n    launch.calls = getattr(launch, 'calls', 0) + 1\n", "launch"),
    ):
        m = _module(code)
        getattr(m, call)(1)
        before = module_state(m)
        getattr(m, call)(2)
        assert module_state(m) != before, code


def test_a_workspace_buffer_the_kernel_rewrites_is_not_new_state() -> None:
    m = _module("import torch\nCONFIG = {'BLOCK': 128}\n_ws = torch.zeros(8)\ndef launch(k):\n    _ws.fill_(k)\n")
    m.launch(1)
    before = module_state(m)
    m.launch(2)
    assert module_state(m) == before


def test_the_recorder_names_the_torch_op_an_output_holds() -> None:
    x, y = torch.randn(16), torch.randn(16)
    rec = op_recorder()
    with rec:
        computed = torch.sub(x, torch.neg(y))
        copied = torch.empty_like(x)
        copied.copy_(computed)
        view = computed[2:5]
        fresh = torch.empty_like(x)
        overwritten = torch.sub(x, y)
        overwritten.zero_()
    assert [rec.computed_by(t) for t in (computed, copied, view)] == ["sub"] * 3
    assert [rec.computed_by(t) for t in (fresh, overwritten, x)] == [None] * 3


def test_a_task_whose_own_launch_ends_in_torch_is_not_held_to_blame_for_it() -> None:
    """torch_output judges what a candidate does that its task does not: a task's launch that scales the
    kernel's result in torch (tests/fixtures/tasks/add_torch_epilogue.py) passes under another config,
    while a candidate of vector_add whose output torch computed (the disguised_torch_ops cheat) still
    fails."""
    from services.toolrunner.tools.honesty_probe.spec import run
    from shared.tools.honesty import HonestyInput

    root = Path(__file__).resolve().parents[2]
    own = run(HonestyInput(task_path=str(root / "tests/fixtures/tasks/add_torch_epilogue.py"),
                           config={"BLOCK": 256}, seeds=[0, 1], device="cpu"))
    assert own.passed, own.summary
    cheat = run(HonestyInput(task_path=str(root / "examples/vector_add.py"), seeds=[0, 1], device="cpu",
                             candidate_path=str(root / "tests/verifier/cheats/disguised_torch_ops.py")))
    assert not cheat.passed and any(f.kind == "torch_output" for f in cheat.findings), cheat.summary


def test_a_task_whose_own_launch_keeps_state_is_not_held_to_blame_for_it() -> None:
    """stateful_launch judges state a candidate keeps that its task does not: a task whose launch counts
    its calls (tests/fixtures/tasks/add_counts_calls.py) passes under another config, while the
    call_counter cheat of vector_add still fails."""
    from services.toolrunner.tools.honesty_probe.spec import run
    from shared.tools.honesty import HonestyInput

    root = Path(__file__).resolve().parents[2]
    own = run(HonestyInput(task_path=str(root / "tests/fixtures/tasks/add_counts_calls.py"),
                           config={"BLOCK": 256}, seeds=[0, 1], device="cpu"))
    assert own.passed, own.summary
    cheat = run(HonestyInput(task_path=str(root / "examples/vector_add.py"), seeds=[0, 1], device="cpu",
                             candidate_path=str(root / "tests/verifier/cheats/call_counter.py")))
    assert not cheat.passed and any(f.kind == "stateful_launch" for f in cheat.findings), cheat.summary
