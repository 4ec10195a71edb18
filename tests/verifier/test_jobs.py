"""Candidate message -> VerifyJob: which file is the candidate, the baseline and the reference (pure)."""

from __future__ import annotations

from services.verifier.jobs import Lineage
from shared.messages import Candidate


def cand(path: str, version: int, parent: Candidate | None = None, **config: int) -> Candidate:
    return Candidate(
        source="planner",
        kernel="add_kernel",
        task_path=path,
        version=version,
        parent_id=parent.id if parent else None,
        config=config,
        job_id="j",
    )


def test_a_config_change_of_the_task_is_the_task_itself_under_that_config() -> None:
    c = cand("/t/add.py", 1, BLOCK=512)
    job = Lineage().job(c)
    assert (job.task_path, job.candidate_path, job.config) == ("/t/add.py", None, {"BLOCK": 512})
    assert (job.parent_path, job.parent_config, job.causation_id, job.job_id) == (None, {}, c.id, "j")


def test_an_edited_file_is_checked_against_the_root_task_and_timed_against_its_parent() -> None:
    lineage = Lineage()
    root = cand("/t/add.py", 0)
    v1 = cand("/t/add.v1.py", 1, root, BLOCK=256)
    v2 = cand("/t/add.v2.py", 2, v1, BLOCK=1024)
    for c in (root, v1):
        lineage.job(c)
    job = lineage.job(v2)
    assert (job.task_path, job.candidate_path) == ("/t/add.py", "/t/add.v2.py")
    assert (job.parent_path, job.parent_config) == ("/t/add.v1.py", {"BLOCK": 256})


def test_an_unknown_parent_leaves_the_candidate_as_its_own_reference() -> None:
    orphan = Candidate(source="planner", kernel="k", task_path="/t/x.py", version=3, parent_id="gone")
    job = Lineage().job(orphan)
    assert (job.task_path, job.candidate_path, job.parent_path) == ("/t/x.py", None, None)


def test_the_lineage_forgets_the_oldest_beyond_its_limit() -> None:
    lineage = Lineage(limit=2)
    a, b, c = cand("/a.py", 0), cand("/b.py", 0), cand("/c.py", 0)
    for x in (a, b, c):
        lineage.remember(x)
    assert list(lineage.seen) == [b.id, c.id]


def planned(version: int, path: str, parent: Candidate | None = None, sha: str = "", **config: int) -> Candidate:
    """A candidate as the planner sends it (services/planner/jobs.py add_candidates): `task_path` the
    user's task, `candidate_path` the file it wrote the candidate's source into."""
    return Candidate(source="planner", kernel="transpose", task_path="/t/transpose.py", candidate_path=path,
                     version=version, parent_id=parent.id if parent else None, config=config, job_id="j",
                     source_sha256=sha)


def test_a_first_round_rewrite_is_measured_from_its_own_file_against_the_task() -> None:
    """H200 run r36: a cuda_tiled_transpose candidate was timed 1.000x because its file was ignored."""
    v1 = planned(1, "/s/candidates/aa/task.py", sha="ab" * 32, BLOCK_X=32)
    job = Lineage().job(v1)
    assert (job.task_path, job.candidate_path, job.candidate_sha256) == (
        "/t/transpose.py", "/s/candidates/aa/task.py", "ab" * 32)
    assert (job.parent_path, job.parent_config) == (None, {})  # baseline: the task at its CONFIG


def test_a_stacked_rewrite_is_timed_against_its_parents_file() -> None:
    lineage = Lineage()
    v1 = planned(1, "/s/candidates/aa/task.py", BLOCK_X=32)
    v2 = planned(2, "/s/candidates/bb/task.py", v1, BLOCK_X=64)
    lineage.job(v1)
    job = lineage.job(v2)
    assert (job.task_path, job.candidate_path) == ("/t/transpose.py", "/s/candidates/bb/task.py")
    assert (job.parent_path, job.parent_config) == ("/s/candidates/aa/task.py", {"BLOCK_X": 32})
