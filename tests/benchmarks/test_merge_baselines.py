"""merge_baselines.py on CPU: baselines of a later session filled into a suite report's rows.

The rows are real: copied from the committed H200 suite (benchmarks/results/h200/suite/kernels.json) into a
tmp report. The baselines files written here are TEST INPUT chosen to be checkable by hand, not
measurements: no compile time below was measured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from benchmarks import merge_baselines, run_suite

COMMITTED = Path(__file__).resolve().parents[2] / "benchmarks/results/h200/suite/kernels.json"
NOT_MEASURED = "baselines not measured: compile"


def _suite(tmp_path: Path, tasks: tuple[str, ...] = ("l1_relu", "l2_matmul_square")) -> Path:
    """A report of the committed rows of `tasks`, written by run_suite.write into tmp_path."""
    committed = msgspec.json.decode(COMMITTED.read_bytes(), type=run_suite.Report)
    rows = [r for r in committed.rows if r.task in tasks]
    assert [r.task for r in rows] == list(tasks), "the committed suite lost a row this test copies"
    for r in rows:  # the state this script exists for: compile never measured
        if r.baselines_ms["compile"] is not None:  # merged since this test was written: undo that merge
            r.baselines_ms["compile"] = r.speedup_vs["compile"] = None
            r.notes = [NOT_MEASURED] + [
                n for n in r.notes if not n.startswith(("compile baseline", "compile:"))
            ]
        assert NOT_MEASURED in r.notes, f"{r.task}: {r.notes}"
    report = msgspec.structs.replace(committed, rows=rows)
    out = tmp_path / "kernels.json"
    run_suite.write(report, out, out.with_suffix(".md"))
    return out


def _timing(median_ms: float | None, error: str = "", compile_s: float | None = None) -> dict[str, Any]:
    ok = median_ms is not None
    return {
        "median_ms": median_ms,
        "p20_ms": median_ms,
        "p80_ms": median_ms,
        "n": 10 if ok else 0,
        "cuda_graph": False,
        "error": error,
        "compile_s": compile_s,
    }


def _baselines(
    tmp_path: Path,
    tasks: dict[str, dict[str, Any]],
    device: str = "NVIDIA H200",
    name: str = "baselines_later.json",
) -> Path:
    """TEST INPUT in benchmarks/baselines.py's format."""
    data = {
        "roofline": {},
        "tasks": [{"task": t, "baselines": b} for t, b in tasks.items()],
        "provenance": {"device": device, "driver": "580.159.04", "cuda": "13.0", "torch": "2.11.0+cu130"},
        "wall_s": 1.0,
    }
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2))
    return path


def _run(suite: Path, baselines: Path, *extra: str) -> int:
    return merge_baselines.main(["--suite", str(suite), "--baselines", str(baselines), *extra])


def _rows(suite: Path) -> dict[str, dict[str, Any]]:
    return {r["task"]: r for r in json.loads(suite.read_text())["rows"]}


def test_compile_is_filled_speedup_recomputed_and_a_second_merge_changes_nothing(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    before = _rows(suite)
    # TEST INPUT: compile at 0.2 ms for relu (its after is ~0.1305 ms, so ours is ~1.53x faster).
    bl = _baselines(tmp_path, {"l1_relu": {"compile": _timing(0.2, compile_s=41.23)}})
    assert _run(suite, bl) == 0
    relu = _rows(suite)["l1_relu"]
    after_ms = before["l1_relu"]["after"]["median_ms"]
    assert relu["baselines_ms"] == {"eager": before["l1_relu"]["baselines_ms"]["eager"], "compile": 0.2}
    assert relu["speedup_vs"]["compile"] == pytest.approx(0.2 / after_ms)
    assert relu["speedup_vs"]["eager"] == before["l1_relu"]["speedup_vs"]["eager"]
    assert relu["meets_target"] is True  # roofline target: 0.97 of the bound, compile does not change it
    assert NOT_MEASURED not in relu["notes"]
    provenance = (
        "compile baseline from baselines_later.json (measured in another session than this row's kernel "
        "times; same device model); torch.compile first call 41.2 s"
    )
    assert relu["notes"] == [n for n in before["l1_relu"]["notes"] if n != NOT_MEASURED] + [provenance]
    assert _rows(suite)["l2_matmul_square"] == before["l2_matmul_square"]  # absent from FILE: untouched
    md = suite.with_suffix(".md").read_text()
    relu_line = next(line for line in md.splitlines() if line.startswith("| l1_relu |"))
    cells = [c.strip() for c in relu_line.split("|")]
    assert cells[8] == f"{0.2 / after_ms:.2f}" == "1.53"  # the "vs compile" column
    assert "compile baseline from baselines_later.json" in md
    first = (suite.read_bytes(), suite.with_suffix(".md").read_bytes())
    assert _run(suite, bl) == 0
    assert (suite.read_bytes(), suite.with_suffix(".md").read_bytes()) == first


def test_meets_target_is_recomputed_from_the_merged_baselines(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    sq = _rows(suite)["l2_matmul_square"]
    assert sq["meets_target"] is True and sq["target"] == ">= 0.95x matmul"
    after_ms = sq["after"]["median_ms"]
    # TEST INPUT: a matmul twice as fast as ours (0.5x, under the 0.95x target) and a compile time.
    tasks = {"l2_matmul_square": {"compile": _timing(1.0), "matmul": _timing(0.5 * after_ms)}}
    bl = _baselines(tmp_path, tasks)
    out_md = tmp_path / "other.md"
    assert _run(suite, bl, "--names", "compile,matmul", "--out-md", str(out_md)) == 0
    sq = _rows(suite)["l2_matmul_square"]
    assert sq["speedup_vs"]["matmul"] == pytest.approx(0.5)
    assert sq["speedup_vs"]["compile"] == pytest.approx(1.0 / after_ms)
    assert sq["meets_target"] is False
    assert not any(n.startswith("baselines not measured") for n in sq["notes"])  # nothing is missing
    assert [n.split(" (")[0] for n in sq["notes"][-2:]] == [
        "compile baseline from baselines_later.json",
        "matmul baseline from baselines_later.json",
    ]
    assert "| l2_matmul_square |" in out_md.read_text()


def test_a_failed_compile_is_noted_as_not_measured_once(tmp_path: Path) -> None:
    suite = _suite(tmp_path, ("l1_relu",))
    before = _rows(suite)["l1_relu"]
    err = "InductorError: out of resource: shared memory"  # TEST INPUT
    failed = f"compile: not measured: {err} (baselines_later.json)"
    bl = _baselines(tmp_path, {"l1_relu": {"compile": _timing(None, error=err)}})
    for _ in range(2):
        assert _run(suite, bl) == 0
        relu = _rows(suite)["l1_relu"]
        assert relu["baselines_ms"]["compile"] is None and relu["speedup_vs"]["compile"] is None
        assert relu["notes"] == before["notes"] + [failed]
        assert relu["meets_target"] == before["meets_target"]


def test_failures_of_two_files_are_both_kept_until_a_figure_replaces_them(tmp_path: Path) -> None:
    """Run 19 timed block-sparse's compile out; run 21 never reached it. Both notes stay, each naming its
    file; a later figure removes them."""
    suite = _suite(tmp_path, ("l1_relu",))
    before = _rows(suite)["l1_relu"]
    timeout = _baselines(
        tmp_path, {"l1_relu": {"compile": _timing(None, error="timeout: 59 s")}}, name="a.json"
    )
    never = tmp_path / "b.json"  # TEST INPUT: baselines.py's entry for a task it had no time left for
    data = json.loads(timeout.read_text())
    data["tasks"] = [{"task": "l1_relu", "not_measured": "budget spent before this task"}]
    never.write_text(json.dumps(data))
    for path in (timeout, never, timeout):  # the same file twice: still one note of it
        assert _run(suite, path) == 0
    relu = _rows(suite)["l1_relu"]
    assert relu["notes"] == before["notes"] + [
        "compile: not measured: budget spent before this task (b.json)",
        "compile: not measured: timeout: 59 s (a.json)",
    ]
    assert _run(suite, _baselines(tmp_path, {"l1_relu": {"compile": _timing(0.2)}}, name="c.json")) == 0
    notes = _rows(suite)["l1_relu"]["notes"]
    assert not [n for n in notes if n.startswith("compile: not measured")] and NOT_MEASURED not in notes
    assert notes[-1].startswith("compile baseline from c.json")


def test_baselines_of_another_device_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = _suite(tmp_path, ("l1_relu",))
    md = suite.with_suffix(".md")
    kept = (suite.read_bytes(), md.read_bytes())
    bl = _baselines(tmp_path, {"l1_relu": {"compile": _timing(0.2)}}, device="NVIDIA A100")
    assert _run(suite, bl) == 2
    assert "baselines from 'NVIDIA A100' cannot be merged into rows measured on 'NVIDIA H200'" in (
        capsys.readouterr().err
    )
    assert (suite.read_bytes(), md.read_bytes()) == kept  # nothing written


def test_missing_or_malformed_files_and_foreign_names_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(tmp_path, ("l1_relu",))
    kept = suite.read_bytes()
    assert _run(suite, tmp_path / "nope.json") == 2
    assert "--baselines" in (err := capsys.readouterr().err) and "no such file" in err
    bl = _baselines(tmp_path, {"l1_relu": {"compile": _timing(0.2)}})
    assert _run(tmp_path / "no_kernels.json", bl) == 2
    assert "--suite" in (err := capsys.readouterr().err) and "no such file" in err
    (bad := tmp_path / "bad.json").write_text('{"tasks": [{"baselines": {}}]}')  # no "task"
    assert _run(suite, bad) == 2
    assert "not a benchmarks/baselines.py output" in capsys.readouterr().err
    assert _run(suite, bl, "--names", "sdpa") == 2  # l1_relu has no SDPA baseline
    assert "not a baseline of l1_relu" in capsys.readouterr().err
    assert suite.read_bytes() == kept


def test_a_file_without_the_named_baselines_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The shape of the committed --skip-compile baselines files: eager only (TEST INPUT value).
    suite = _suite(tmp_path, ("l1_relu",))
    kept = suite.read_bytes()
    assert _run(suite, _baselines(tmp_path, {"l1_relu": {"eager": _timing(0.13)}})) == 1
    assert "nothing merged" in capsys.readouterr().err
    assert suite.read_bytes() == kept


def test_tasks_takes_only_the_named_tasks_and_refuses_one_not_in_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(tmp_path)
    before = _rows(suite)
    bl = _baselines(
        tmp_path, {"l1_relu": {"compile": _timing(0.2)}, "l2_matmul_square": {"compile": _timing(1.5)}}
    )
    kept = suite.read_bytes()
    assert _run(suite, bl, "--tasks", "l1_gelu") == 2
    assert "--tasks ['l1_gelu']: not in baselines_later.json (it has l1_relu, l2_matmul_square)" in (
        capsys.readouterr().err
    )
    assert suite.read_bytes() == kept
    assert _run(suite, bl, "--tasks", "l2_matmul_square") == 0
    rows = _rows(suite)
    assert rows["l2_matmul_square"]["baselines_ms"]["compile"] == 1.5
    assert rows["l1_relu"] == before["l1_relu"]  # in the file, but not asked for
