"""benchmarks/bench_decomposer_ncu.py's batch split and per-case fallback, on real H200 ncu output.

The multi-kernel input is tests/fixtures/h200-probe/ncu_raw.csv (the committed copy of
/work/shared/fixtures/h200-probe/ncu_raw.csv): one real ncu raw page from the H200 of 234
launches (Triton add_kernel, softmax_naive, transpose_naive, and torch's own randn/add kernels). The
batch-shaped CSVs below keep its preamble, header and units row and a chosen subset of its real rows,
i.e. what `-k regex:^(add_kernel|softmax_naive|transpose_naive)$ -c 4` keeps of such a run; no cell is
edited. tests/fixtures/h200/ncu_vector_add_raw.csv is a real one-kernel page.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import bench_decomposer_ncu as bench
from benchmarks.ncu_schedule import Run
from shared.parsers.ncu import NcuCsvError, parse_ncu_csv, select_kernel

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROBE = FIXTURES / "h200-probe" / "ncu_raw.csv"
ONE = FIXTURES / "h200" / "ncu_vector_add_raw.csv"
KERNELS = {
    "add": "add_kernel",
    "softmax": "softmax_naive",
    "transpose": "transpose_naive",
    "add2": "add_kernel",
}


def _rows(text: str, picks: list[int]) -> str:
    """The page's lines up to its units row, then its data rows number `picks` (0-based), in that order."""
    lines = text.splitlines()
    h = next(i for i, ln in enumerate(lines) if ln.startswith('"ID",'))
    assert len(lines) == h + 2 + len(parse_ncu_csv(text))  # one physical line per row: safe to pick
    return "\n".join(lines[: h + 2] + [lines[h + 2 + i] for i in picks]) + "\n"


def _counters(p: Any) -> dict[str, float]:
    return {k: m.value for k, m in p.metrics.items() if m.value is not None}


@pytest.fixture(scope="module")
def probe() -> tuple[str, list[Any], dict[str, int]]:
    text = PROBE.read_text()
    profs = parse_ncu_csv(text)
    first = {k: next(i for i, p in enumerate(profs) if p.kernel == k) for k in set(KERNELS.values())}
    return text, profs, first


def test_batch_rows_go_to_their_cases_in_launch_order(probe: tuple[str, list[Any], dict[str, int]]) -> None:
    text, profs, first = probe
    add2 = next(i for i, p in enumerate(profs) if p.kernel == "add_kernel" and i > first["add_kernel"])
    # a torch randn row (row 0) sits in the page too, as an unfiltered run would leave it: dropped
    picks = [0, first["add_kernel"], first["softmax_naive"], first["transpose_naive"], add2]
    got = bench.split_batch(_rows(text, picks), ["add", "softmax", "transpose", "add2"], KERNELS)
    assert list(got) == ["add", "softmax", "transpose", "add2"]
    for case, i in zip(got, picks[1:], strict=True):
        assert got[case] == _counters(profs[i]), case
    # two cases of one kernel name are told apart by order alone: their real durations differ
    assert got["add"]["gpu__time_duration.sum"] != got["add2"]["gpu__time_duration.sum"]


def test_rows_that_do_not_line_up_raise(probe: tuple[str, list[Any], dict[str, int]]) -> None:
    text, _, first = probe
    with pytest.raises(NcuCsvError, match="82 profiled rows for 3 launched cases"):
        bench.split_batch(text, ["add", "softmax", "transpose"], KERNELS)  # the whole 234-row page
    batch = _rows(text, [first["add_kernel"], first["softmax_naive"]])
    with pytest.raises(NcuCsvError, match="kernel 'add_kernel', but case softmax launches 'softmax_naive'"):
        bench.split_batch(batch, ["softmax", "add"], KERNELS)
    with pytest.raises(NcuCsvError, match="1 profiled rows for 2 launched"):  # a launch left no row
        bench.split_batch(_rows(text, [first["add_kernel"]]), ["add", "add2"], KERNELS)


def test_one_case_batch_gives_the_counters_the_per_case_path_gave() -> None:
    text = ONE.read_text()
    got = bench.split_batch(text, ["clean_add"], {"clean_add": "add_kernel"})
    assert got == {"clean_add": _counters(select_kernel(parse_ncu_csv(text), "add_kernel"))}
    assert got["clean_add"]["gpu__time_duration.sum"] > 0


def test_a_bad_case_is_retried_alone_and_cannot_sink_its_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """measure()'s control flow with profile_batch replaced: a batch holding "cuda_spills" fails as a
    whole (as a sticky CUDA fault would); every other case then gets the real one-kernel counters."""
    counters = bench.split_batch(ONE.read_text(), ["x"], {"x": "add_kernel"})["x"]
    calls: list[list[str]] = []

    def fake(batch: list[dict[str, Any]], ncu: str, tmp: Path, timeout_s: float, tag: str) -> Any:
        cases = [e["case"] for e in batch]
        calls.append(cases)
        if "cuda_spills" in cases:
            return Run({}, dict.fromkeys(cases, "not measured: ncu exited 1: illegal address"))
        return Run(dict.fromkeys(cases, counters), {})

    monkeypatch.setattr(bench, "profile_batch", fake)
    names = ["cuda_clean_saxpy", "cuda_spills", "cuda_fp64_loop", "clean_add"]
    entries = [e for e in bench.plan() if e["case"] in names]
    batches = bench.plan_batches(entries, 16)
    args = argparse.Namespace(budget_s=600.0, batch_timeout_s=300.0, case_timeout_s=60.0)
    sched = bench.measure(entries, batches, {}, "ncu", args)
    got, why = sched.counters, sched.why
    assert calls[0] == ["clean_add"] and sorted(calls[1]) == sorted(names[:3])
    assert sorted(c[0] for c in calls[2:]) == sorted(names[:3]) and all(len(c) == 1 for c in calls[2:])
    assert set(got) == {"cuda_clean_saxpy", "cuda_fp64_loop", "clean_add"}
    assert why == {"cuda_spills": "not measured: ncu exited 1: illegal address"}
    assert (
        batches[1]["outcome"] == "0 of 3 measured"
        and batches[1]["retried"]["cuda_spills"]["ncu"] != "measured"
    )


def test_budget_stops_new_batches_and_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        bench, "profile_batch", lambda b, *a: Run({}, {e["case"]: "not measured: x" for e in b})
    )
    entries = [e for e in bench.plan() if e["case"] in ("clean_add", "tiny_add", "cuda_clean_saxpy")]
    batches = bench.plan_batches(entries, 16)
    args = argparse.Namespace(budget_s=-1.0, batch_timeout_s=100.0, case_timeout_s=40.0)
    sched = bench.measure(entries, batches, {}, "ncu", args)
    assert sched.counters == {} and set(sched.why.values()) == {"not measured: --budget-s -1 spent"}
    assert all(b["outcome"] == "not started: budget spent" for b in batches)


def test_the_generated_launcher_loads_as_a_task(tmp_path: Path) -> None:
    """The module launch_task imports under ncu: importable off the GPU, no tensors made up front."""
    from services.toolrunner.task_runtime import import_task, runtime_for

    shim = tmp_path / "task_b0.py"
    cases = ["clean_add", "tiny_add"]
    shim.write_text(bench._SHIM.format(cases=cases, root=str(bench.ROOT), manifest=str(tmp_path / "m.json")))
    rt = runtime_for(import_task(shim))
    assert rt.make_inputs({}, 0, "cuda") == () and rt.reference(()) is None
    assert repr(cases) in shim.read_text()


def test_the_launch_manifest_names_the_case_in_flight_while_it_hangs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run_batch rewrites its manifest as each case starts and ends, so a batch killed at its timeout still
    says which case held it (r33: cuda_device_malloc hung its batch; the old manifest, written at the end,
    was never written). Here the second case's launch blocks until the manifest has been read."""
    import threading
    import time

    import torch

    release = threading.Event()
    launches: list[str] = []

    def launch(case: str, inputs: Any) -> None:
        launches.append(case)
        if case == "hangs":
            assert release.wait(10), "the test did not release the hanging launch"
        if case == "breaks":
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(bench, "make_inputs", lambda case, device: ())
    monkeypatch.setattr(bench, "launch", launch)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda.profiler, "start", lambda: None)
    monkeypatch.setattr(torch.cuda.profiler, "stop", lambda: None)
    manifest = tmp_path / "launched.json"
    t = threading.Thread(target=bench.run_batch, args=(["ok", "breaks", "hangs", "after"], str(manifest)))
    t0 = time.time()
    t.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and launches.count("hangs") < 1:
        time.sleep(0.01)
    state = json.loads(manifest.read_text())
    case, since = bench.in_flight(state)
    assert case == "hangs" and t0 <= since <= time.time()
    assert state["finished"] == ["ok"] and "illegal memory access" in state["failed"]["breaks"]
    release.set()
    t.join(10)
    done = json.loads(manifest.read_text())
    assert bench.in_flight(done) is None and done["launched"] == ["ok", "hangs", "after"]
    assert not (tmp_path / "launched.json.tmp").exists()
