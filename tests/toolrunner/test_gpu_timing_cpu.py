"""The sampling loop of worker_lib/gpu_timing.py on CPU, with a recording stand-in for torch.cuda.

It checks the order of what is enqueued, not times (those need the H200): flush outside every event pair,
ABBA rounds, chunk c+1 enqueued before the host waits on chunk c (no sync between samples), NVML read once
per chunk boundary and each sample tagged with the reads around its chunk, and the estimate taken per call.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from services.toolrunner.worker_lib.gpu_timing import Bench, Plan


class Log:
    def __init__(self) -> None:
        self.ops: list[str] = []
        self.clock = 0.0  # fake GPU time: each call adds its label's duration


class FakeEvent:
    def __init__(self, log: Log) -> None:
        self.log, self.t = log, None

    def record(self) -> None:
        self.t = self.log.clock
        self.log.ops.append("rec")

    def synchronize(self) -> None:
        self.log.ops.append("wait")

    def elapsed_time(self, other: FakeEvent) -> float:
        assert self.t is not None and other.t is not None
        return other.t - self.t


def fake_bench(log: Log) -> Bench:
    b = Bench.__new__(Bench)  # no torch, no triton driver
    cuda = SimpleNamespace(
        Event=lambda enable_timing=False: FakeEvent(log),
        synchronize=lambda: log.ops.append("sync"),
    )
    b.torch = SimpleNamespace(cuda=cuda)  # type: ignore[assignment]
    b.flush_ms = 0.0

    def flush() -> None:
        log.ops.append("flush")
        log.clock += 0.07

    b.flush = flush  # type: ignore[method-assign]
    return b


def call(log: Log, name: str, ms: float) -> Any:
    def f() -> None:
        log.ops.append(name)
        log.clock += ms

    return f


class FakeNvml:
    def __init__(self, log: Log, masks: list[int | None]) -> None:
        self.log, self.masks = log, list(masks)

    def mask(self) -> int | None:
        self.log.ops.append("nvml")
        return self.masks.pop(0)


def test_rounds_are_chunked_abba_without_a_sync_between_samples() -> None:
    log = Log()
    b = fake_bench(log)
    # Two sides of 0.93 ms + 0.07 ms flush: 2 ms a round, 5 rounds per 10 ms chunk, 12 rounds = 3 chunks.
    plan = Plan(estimate_ms=0.93, n_warmup=2, n_reps=12, graph=False, calls_per_sample=1, flush_ms=0.07)
    nvml = FakeNvml(log, [0, 0, 0x4, 0])  # sw_power_cap read at the end of chunk 1
    ta, tb = b.run([call(log, "A", 0.5), call(log, "B", 0.25)], plan, nvml)
    assert len(ta.samples) == len(tb.samples) == 12
    assert ta.samples == pytest.approx([0.5] * 12) and tb.samples == pytest.approx([0.25] * 12)  # no flush
    # Chunk 0 = rounds 0-4, chunk 1 = 5-9 (its end read 0x4), chunk 2 = 10-11 (its start read 0x4).
    assert ta.masks == [0] * 5 + [0x4] * 7 and tb.masks == ta.masks
    ops = log.ops
    warm = ops.index("sync")
    assert ops[:warm] == ["flush", "A", "flush", "A", "flush", "B", "flush", "B"]
    assert "sync" not in ops[warm + 1 :]  # no device-wide sync while sampling
    timed = [o for o in ops[warm + 1 :] if o in ("A", "B")]
    assert timed == ["A", "B", "B", "A"] * 6  # ABBA
    # The host waits on chunk c only after chunk c+1 is queued: the first wait comes after 10 rounds.
    first_wait = ops.index("wait")
    assert sum(o in ("A", "B") for o in ops[warm:first_wait]) == 2 * 10
    assert ops.count("wait") == 3 and ops.count("nvml") == 4
    for i, o in enumerate(ops[warm + 1 :], start=warm + 1):  # each timed call: flush, rec, call, rec
        if o in ("A", "B"):
            assert ops[i - 2 : i] == ["flush", "rec"] and ops[i + 1] == "rec"


def test_estimate_is_per_call_with_the_first_flush_and_call_untimed() -> None:
    log = Log()
    b = fake_bench(log)
    est = b.estimate(call(log, "K", 0.0036))
    ops = log.ops
    assert ops[:4] == ["K", "flush", "K", "sync"]  # compile, first flush, warm call: all untimed
    assert ops[4:] == ["flush", "rec", "K", "rec"] * 5 + ["rec", "flush", "rec", "sync"]
    assert abs(est - 0.0036) < 1e-12 and abs(b.flush_ms - 0.07) < 1e-12
    assert b.plan(est, 25.0, 100.0, "auto").graph  # a 3.6 us call is replayed from a CUDA graph
