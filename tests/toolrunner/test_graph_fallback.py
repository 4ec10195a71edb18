"""A launch path with a host sync is timed without CUDA-graph capture, with the reason in full; declared
in-place inputs are restored outside the events. On CPU: the decision, the reason's text and the order
of what Bench enqueues (a recording stand-in for torch.cuda, as in test_gpu_timing_cpu.py). The GPU half
(torch's sync debug mode really raising on `.item()`) is test_gpu_tools.py's host-sync test."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.toolrunner.graph_capture import decide_graph, exception_text, host_syncs, sync_refusal
from services.toolrunner.worker_lib.gpu_timing import Plan, describe
from tests.toolrunner.test_gpu_timing_cpu import FakeNvml, Log, call, fake_bench

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
SYNC_TASK = FIX / "add_host_sync.py"
# What torch 2.x says when a stream capture meets a blocking copy: the cause on the first line, hints after.
TORCH_CAPTURE_ERROR = (
    "CUDA error: operation not permitted when stream is capturing\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
    "might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)


def _raised_in_the_task() -> RuntimeError:
    """A RuntimeError raised from the fixture's launch line (its traceback frames name the task file)."""
    code = compile("\n" * 36 + "raise RuntimeError(MSG)\n", str(SYNC_TASK), "exec")
    try:
        exec(code, {"MSG": TORCH_CAPTURE_ERROR})  # noqa: S102 - a fixed snippet, to get a real traceback
    except RuntimeError as e:
        return e
    raise AssertionError("the snippet did not raise")


def test_the_decision_asks_for_a_refusal_only_when_a_graph_would_be_used() -> None:
    def never() -> str:
        raise AssertionError("asked without need")

    assert decide_graph("auto", 0.5, never) == (False, "")  # 500 us: no graph anyway
    assert decide_graph("off", 0.001, never) == (False, "")
    assert decide_graph("auto", 0.003, lambda: "") == (True, "")
    graph, why = decide_graph("auto", 0.003, lambda: "launch synchronises with the host: X")
    assert not graph
    assert why == ("timed without CUDA-graph capture, one call per sample: one call takes 3.0 us (< 10 us: "
                   "auto replays a CUDA graph), but launch synchronises with the host: X")
    assert decide_graph("on", 5.0, lambda: "no")[1].startswith(
        "timed without CUDA-graph capture, one call per sample: cuda_graph='on' asked for")


def test_the_reason_holds_every_line_of_the_message_and_the_task_line() -> None:
    text = exception_text(_raised_in_the_task(), str(SYNC_TASK))
    assert text.startswith("RuntimeError: CUDA error: operation not permitted when stream is capturing | ")
    assert "For debugging consider passing CUDA_LAUNCH_BLOCKING=1" in text
    assert "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions." in text
    line = SYNC_TASK.read_text().splitlines()[36].strip()
    assert text.endswith(f"(at line 37 of add_host_sync.py: `{line}`)")


def test_the_host_syncs_of_launch_are_found_statically() -> None:
    assert host_syncs(SYNC_TASK.read_text()) == ["line 37: `x.abs().max().item()`"]
    assert host_syncs("def launch(inputs):\n    return inputs[0].cpu().tolist()\n") == [
        "line 2: `inputs[0].cpu().tolist()`", "line 2: `inputs[0].cpu()`"]
    assert host_syncs("def launch(inputs):\n    return inputs\n") == []


def test_sync_refusal_names_the_stage_the_error_and_the_calls() -> None:
    why = sync_refusal(_raised_in_the_task(), str(SYNC_TASK), "cannot be captured in a CUDA graph")
    assert why.startswith("launch cannot be captured in a CUDA graph: RuntimeError: CUDA error: operation not")
    assert why.endswith("; launch() calls line 37: `x.abs().max().item()`")


def _sync_torch(log: Log, bench: object, fail_capture: bool) -> None:
    modes = ["default"]

    def set_mode(m: str) -> None:
        log.ops.append(f"mode={m}")
        modes.append(m)

    bench.torch.cuda.get_sync_debug_mode = lambda: modes[-1]  # type: ignore[attr-defined]
    bench.torch.cuda.set_sync_debug_mode = set_mode  # type: ignore[attr-defined]

    def as_graph(fn: object, k: int) -> object:
        log.ops.append(f"capture{k}")
        if fail_capture:
            raise RuntimeError(TORCH_CAPTURE_ERROR)
        return fn

    bench.as_graph = as_graph  # type: ignore[attr-defined]


def test_graph_refusal_probes_under_sync_debug_mode_and_restores_the_mode() -> None:
    log = Log()
    b = fake_bench(log)
    _sync_torch(log, b, fail_capture=False)

    def item() -> None:  # what torch does for `.item()` under set_sync_debug_mode("error")
        if b.torch.cuda.get_sync_debug_mode() == "error":
            raise RuntimeError("called a synchronizing CUDA operation")

    why = b.graph_refusal(item, str(SYNC_TASK), lambda: log.ops.append("restore"))
    assert why.startswith("launch synchronises with the host: RuntimeError: called a synchronizing CUDA "
                          "operation")
    assert why.endswith("; launch() calls line 37: `x.abs().max().item()`")
    assert log.ops == ["sync", "restore", "mode=error", "mode=default"]
    assert b.graph_refusal(call(log, "K", 0.001), "", lambda: None) == ""  # no sync, captured


def test_a_failed_capture_is_a_refusal_too() -> None:
    log = Log()
    b = fake_bench(log)
    _sync_torch(log, b, fail_capture=True)
    why = b.graph_refusal(call(log, "K", 0.001), "")
    assert why.startswith("launch cannot be captured in a CUDA graph: RuntimeError: CUDA error: operation not "
                          "permitted when stream is capturing | CUDA kernel errors might be")
    assert "capture1" in log.ops


def test_the_plan_and_method_carry_the_fallback_and_the_restore() -> None:
    log = Log()
    b = fake_bench(log)
    plan = b.plan(0.003, 25.0, 100.0, "auto", refusal=lambda: "launch synchronises with the host: X")
    assert not plan.graph and plan.calls_per_sample == 1
    assert "one call per sample (timed without CUDA-graph capture" in describe(plan)
    assert plan.graph_fallback.endswith("but launch synchronises with the host: X")
    restored = b.plan(0.003, 25.0, 100.0, "auto", restored=True)
    assert restored.graph and restored.calls_per_sample == 1  # a replay holds one call: restore between
    assert "INPLACE) restored before every timed call, outside the events" in describe(restored)


def test_restore_runs_after_the_flush_and_outside_the_event_pair() -> None:
    log = Log()
    b = fake_bench(log)
    plan = Plan(estimate_ms=0.5, n_warmup=1, n_reps=3, graph=False, calls_per_sample=1, flush_ms=0.07,
                restored=True)
    (timed,) = b.run([call(log, "A", 0.5)], plan, FakeNvml(log, [0, 0]),
                     [lambda: log.ops.append("restore")])
    assert timed.samples == pytest.approx([0.5] * 3)  # the restore is not timed
    ops = log.ops
    warm = ops.index("sync")
    assert ops[:warm] == ["flush", "restore", "A"]  # warm-up restores too
    timed = [i for i, o in enumerate(ops) if o == "A" and i > warm]
    assert len(timed) == 3 and all(ops[i - 3: i] == ["flush", "restore", "rec"] for i in timed)
