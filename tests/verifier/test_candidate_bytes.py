"""The funnel measures the bytes the planner wrote: a candidate file changed after planning fails before
any tool runs (services/verifier/funnel.py changed_since_planned)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from services.verifier.funnel import VerifyJob, changed_since_planned


def test_an_unchanged_candidate_file_passes_and_an_edited_one_is_named(tmp_path: Path) -> None:
    f = tmp_path / "task.py"
    f.write_text("CONFIG = {}\n")
    sha = hashlib.sha256(f.read_bytes()).hexdigest()
    job = VerifyJob(candidate_id="c", task_path="/t/task.py", candidate_path=str(f), candidate_sha256=sha)
    assert changed_since_planned(job) == ""
    f.write_text("CONFIG = {}\nimport os\n")
    why = changed_since_planned(job)
    assert "is not the one the planner wrote" in why and "nothing was measured" in why
    f.unlink()
    assert "candidate file unreadable" in changed_since_planned(job)


def test_a_config_change_has_no_file_to_check() -> None:
    assert changed_since_planned(VerifyJob(candidate_id="c", task_path="/t/task.py", candidate_sha256="x")) == ""
