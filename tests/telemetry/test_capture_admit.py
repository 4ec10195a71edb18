"""The live capture path's pure decisions: which hot kernels are asked for, which captured tasks refused."""

from __future__ import annotations

from pathlib import Path

from services.telemetry.capture_admit import CaptureAsks, check_source, sha256_text, store
from shared.limits import MAX_CAPTURED_TASK_BYTES
from shared.messages import CapturedTaskSource, KernelShare, StateChangeEvent


def _event(edge: str = "start", *kernels: KernelShare) -> StateChangeEvent:
    return StateChangeEvent(source="t", event="throttling", edge=edge, node="n0", gpu="GPU-0", detector="throttling",
                            hot_kernels=list(kernels))


def _captured(text: str, **kw: object) -> CapturedTaskSource:
    return CapturedTaskSource(source="w", kernel="k", node="n0", request_id="r",  # type: ignore[arg-type]
                              sha256=sha256_text(text), source_text=text, **kw)


def test_asks_once_per_kernel_until_answered_or_retry() -> None:
    asks = CaptureAsks(retry_s=600.0)
    hot, cold = KernelShare("k", 0.9, 10), KernelShare("c", 0.05, 10)
    assert [k.kernel for k in asks.wanted(_event("start", hot, cold), 0.0)] == ["k"]  # below HOT_SHARE: no
    assert asks.wanted(_event("clear", hot), 0.0) == []
    asks.asked("n0", "k", 0.0)
    assert asks.wanted(_event("start", hot), 10.0) == []
    assert [k.kernel for k in asks.wanted(_event("start", hot), 601.0)] == ["k"]
    asks.forget("n0", "k")  # answered with an error: the next start edge asks again
    assert [k.kernel for k in asks.wanted(_event("start", hot), 11.0)] == ["k"]


def test_refusals_name_the_fix(tmp_path: Path) -> None:
    assert check_source(_captured("KERNELS = ()\n")) == ""
    big = "#" * (MAX_CAPTURED_TASK_BYTES + 1)
    assert "over the" in check_source(_captured(big)) and "kpilot capture" in check_source(_captured(big))
    bad = CapturedTaskSource(source="w", kernel="k", node="n0", request_id="r", sha256="0" * 64, source_text="x")
    assert "does not match" in check_source(bad)
    assert "not a hex SHA-256" in check_source(CapturedTaskSource(source="w", kernel="k", node="n0",
                                                                  request_id="r", sha256="../x", source_text="x"))
    assert "could not capture" in check_source(_captured("", error="not launched"))
    assert "empty" in check_source(_captured(""))


def test_store_is_content_addressed(tmp_path: Path) -> None:
    msg = _captured("KERNELS = ()\n")
    path = store(tmp_path, msg)
    assert path.name == f"{msg.sha256}.py" and path.read_text() == "KERNELS = ()\n"
    assert store(tmp_path, msg) == path and [p.name for p in tmp_path.iterdir()] == [path.name]
