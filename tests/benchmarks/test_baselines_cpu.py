"""Every task's BASELINES compute what its reference computes, and its full-shape FLOP/byte formulas give
positive numbers (fp32, micro shape, CPU), through the
baselines worker in the sandbox, so a wrong baseline is caught before GPU time is spent timing it.
The timing itself is GPU-only (benchmarks/baselines.py)."""

from __future__ import annotations

import msgspec

from benchmarks.baselines_worker import BaselineJob, BaselineResult
from benchmarks.suite import all_tasks, read_meta
from services.toolrunner.sandbox import Limits, run_worker


def test_every_tasks_baselines_match_its_reference_on_cpu() -> None:
    tasks = all_tasks()
    job = BaselineJob(kind="check", task_paths=[str(p) for p in tasks])
    out = run_worker("benchmarks.baselines_worker", msgspec.json.encode(job), Limits(timeout_s=300.0))
    assert out.status == "ok", out.message
    res = msgspec.json.decode(out.result, type=BaselineResult)
    for path in tasks:
        meta = read_meta(path)
        got = [c.name for c in res.checks if c.task == meta.name]
        assert got == [n for n in meta.baselines if n != "compile"], meta.name
        flops, moved = res.costs[meta.name]
        assert moved > 0, f"{meta.name}: bytes_moved(full) is {moved}"
        if "transpose" not in meta.name:  # a transpose does no arithmetic; every other task does
            assert flops > 0, f"{meta.name}: flops(full) is {flops}"
    failed = [f"{c.task}.{c.name}: max abs err {c.max_abs_err} {c.error}" for c in res.checks if not c.passed]
    assert not failed, failed


def test_the_compile_baseline_finds_every_input_tensor_to_mark_static() -> None:
    import torch

    from benchmarks.baselines_worker import _tensors

    a, b, c = torch.zeros(1), torch.zeros(2), torch.zeros(3)
    assert _tensors((a, [b, 3], {"k": c, "n": None})) == [a, b, c]
    assert _tensors(a) == [a] and _tensors(7) == []


def test_baselines_names_refuses_a_name_no_task_has(capsys) -> None:
    import pytest

    from benchmarks import baselines

    with pytest.raises(SystemExit) as e:
        baselines.main(["--tasks", "l1_relu", "--names", "sdpa"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--names ['sdpa']" in err and "known: ['compile', 'eager']" in err


def test_baselines_task_timeout_must_be_positive(capsys) -> None:
    import pytest

    from benchmarks import baselines

    with pytest.raises(SystemExit) as e:
        baselines.main(["--tasks", "l1_relu", "--task-timeout-s", "0"])
    assert e.value.code == 2
    assert "--task-timeout-s 0.0: must be a positive number of seconds" in capsys.readouterr().err
