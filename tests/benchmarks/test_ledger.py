"""The run ledger on CPU: a run file is checked, run step by step within its budget, stamped and recorded.

The steps here are shell one-liners (no GPU): what is tested is the runner, not a measurement.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from benchmarks import ledger


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "r.toml"
    p.write_text(text)
    return p


def test_run_stamps_every_step_and_packs_results(tmp_path: Path) -> None:
    rf = ledger.load_run_file(_write(tmp_path, """
id = "t1"
purpose = "runner test"
budget_s = 60
[[step]]
name = "stamp"
cmd = "python3 -c 'import json,os; from benchmarks.ledger import run_stamp; json.dump(run_stamp(), open(os.environ[\\"STEP_OUT\\"] + \\"/row.json\\", \\"w\\"))'"
timeout_s = 30
[[step]]
name = "fails"
cmd = "echo boom >&2; exit 3"
timeout_s = 10
"""))
    out = tmp_path / "out"
    result = ledger.run(rf, out, "abc123")
    assert [s.status for s in result.steps] == ["ok", "failed"]
    assert result.steps[1].returncode == 3 and "boom" in result.steps[1].output_tail
    doc = json.loads((out / "ledger.json").read_text())
    assert doc["run_id"] == "t1" and doc["commit"] == "abc123" and "device" in doc["env"]
    with tarfile.open(out / "results.tar.gz") as tar:
        row = json.load(tar.extractfile("steps/stamp/row.json"))  # type: ignore[arg-type]
    assert row["run_id"] == "t1" and row["commit"] == "abc123"
    assert row["device"] == doc["env"]["device"]
    dest = ledger.record(out, tmp_path / "results")
    assert (dest / "steps" / "stamp" / "row.json").exists()
    with pytest.raises(ledger.RunFileError, match="never rewritten"):
        ledger.record(out, tmp_path / "results")


def test_a_step_past_the_budget_is_skipped_and_says_so(tmp_path: Path) -> None:
    rf = ledger.load_run_file(_write(tmp_path, """
id = "t2"
budget_s = 1
[[step]]
name = "slow"
cmd = "sleep 2"
timeout_s = 60
"""))
    result = ledger.run(rf, tmp_path / "out", "c")
    assert result.steps[0].status.startswith("skipped:")


@pytest.mark.parametrize(("text", "needle"), [
    ('id = "bad id"\nbudget_s = 5\n[[step]]\nname="a"\ncmd="true"\ntimeout_s=1\n', "`id`"),
    ('id = "x"\nbudget_s = 0\n[[step]]\nname="a"\ncmd="true"\ntimeout_s=1\n', "budget_s"),
    ('id = "x"\nbudget_s = 5\n', "no [[step]]"),
    ('id = "x"\nbudget_s = 5\nextra = 1\n[[step]]\nname="a"\ncmd="true"\ntimeout_s=1\n', "unknown keys"),
    ('id = "x"\nbudget_s = 5\n[[step]]\nname="a"\ncmd="true"\n', "timeout_s"),
])
def test_bad_run_files_name_the_fix(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(ledger.RunFileError, match=needle.replace("[", r"\[")):
        ledger.load_run_file(_write(tmp_path, text))


def test_committed_run_files_load() -> None:
    for path in sorted((Path(ledger.ROOT) / "benchmarks" / "runs").glob("*.toml")):
        assert ledger.load_run_file(path).steps


def test_runs_are_ordered_by_their_number_not_their_spelling() -> None:
    assert sorted(["r10", "r9", "r41", "r100", "r2"], key=ledger.run_order) == ["r2", "r9", "r10", "r41", "r100"]


def test_record_drops_fixture_copies_only_where_bytes_match(tmp_path: Path) -> None:
    """A step's fx/ file equal to one of its results is listed and removed; a different one stays."""
    step = tmp_path / "r9" / "steps" / "s"
    (step / "results").mkdir(parents=True)
    (step / "fx" / "verifier").mkdir(parents=True)
    (step / "results" / "a.json").write_text('{"x": 1}')
    (step / "fx" / "a.json").write_text('{"x": 1}')
    (step / "fx" / "verifier" / "b.json").write_text('{"x": 2}')
    removed = ledger.drop_fixture_copies(tmp_path / "r9")
    assert removed == [step / "fx" / "a.json"]
    assert (step / "fx" / "verifier" / "b.json").read_text() == '{"x": 2}'
    listing = (step / ledger.FIXTURE_COPIES).read_text()
    assert listing.startswith("fx/a.json ") and listing.rstrip().endswith("= results/a.json")
    assert ledger.drop_fixture_copies(tmp_path / "r9") == []
