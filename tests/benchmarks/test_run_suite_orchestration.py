"""run_suite.run_task's GPU path on CPU, with the three GPU tools replaced by stand-ins.

What is tested is the orchestration (search rounds, the correctness fallback, bench_ab, settle, the
static layers joining the row), so a broken GPU path shows up here and not in a lent GPU window. The
stand-ins' timings are TEST INPUT chosen by hand, not measurements; nothing here claims a speed.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from benchmarks import run_suite
from benchmarks.suite import select


def _stats(ms: float) -> SimpleNamespace:
    return SimpleNamespace(median_ms=ms, p20_ms=ms * 0.99, p80_ms=ms * 1.01, n=10)


@pytest.mark.slow
def test_gpu_path_searches_falls_back_and_ships_the_correct_best(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.toolrunner.tools.autotune import spec as autotune
    from services.toolrunner.tools.bench_ab import spec as bench_ab
    from services.toolrunner.tools.run_correctness import spec as correctness

    meta = select("l1_vector_add")[0]
    timed: list[dict] = []

    def fake_autotune(req):  # type: ignore[no-untyped-def]
        timed.extend(req.configs)
        # Bigger blocks are "faster" (TEST INPUT): the planner's search has a gradient to follow.
        return SimpleNamespace(
            results=[SimpleNamespace(median_ms=1.0 / c["BLOCK"], error="") for c in req.configs]
        )

    checked: list[dict] = []

    def fake_correctness(req):  # type: ignore[no-untyped-def]
        checked.append(dict(req.config))
        ok = len(checked) > 1  # TEST INPUT: the fastest config is "wrong", the next one right
        return SimpleNamespace(passed=ok, summary="all cases pass" if ok else "edge:1 seed 0: mismatch")

    def fake_ab(req):  # type: ignore[no-untyped-def]
        b = 1.0 / req.b.config["BLOCK"]
        return SimpleNamespace(
            a=SimpleNamespace(stats=_stats(1.0 / 128)),
            b=SimpleNamespace(stats=_stats(b)),
            speedup=(1.0 / 128) / b,
            ci_low=(1.0 / 128) / b * 0.99,
            ci_high=(1.0 / 128) / b * 1.01,
            provenance=SimpleNamespace(device="stand-in", driver="-", cuda="-", triton="-", torch="-"),
        )

    monkeypatch.setattr(autotune, "run", fake_autotune)
    monkeypatch.setattr(correctness, "run", fake_correctness)
    monkeypatch.setattr(bench_ab, "run", fake_ab)
    row = run_suite.run_task(
        meta,
        dry_run=False,
        deadline=math.inf,
        gpu=0,
        gpus=1,
        baselines={"l1_vector_add": {"eager": 0.5}},
        roof={"copy_bytes_per_s": 4.0e12, "bf16_flops_per_s": 7.0e14},
    )
    assert timed and row.evaluations and row.funnel["proposed"] == len(row.evaluations)
    assert row.funnel["compiled_start"] == 1 and row.funnel["space"] > 0  # the static layers joined
    assert len(checked) == 2 and any("failed correctness" in n for n in row.notes)  # fell back once
    shipped = {k: v for k, v in row.best_config.items() if row.start_config.get(k) != v}
    assert row.correct is True and shipped == checked[1] != checked[0]
    assert row.outcome.startswith("patched") and row.speedup == row.candidate_speedup > 1
    assert row.after.median_ms == pytest.approx(1.0 / row.best_config["BLOCK"])
    assert row.roofline_fraction is not None and row.speedup_vs["eager"] == pytest.approx(
        0.5 / row.after.median_ms
    )
    assert row.meets_target in (True, False) and row.device == "stand-in"
