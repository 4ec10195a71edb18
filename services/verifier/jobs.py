"""From a `Candidate` message to a `VerifyJob`: which file is the candidate, the baseline and the reference.

The candidate's `task_path` is the file it lives in and `config` its overrides. A candidate without a
parent is verified against its own file's default CONFIG (a pure config change of the task). A candidate
with a known parent is timed against the parent (its file and config) and checked against the root of
its lineage, the original task, whose reference and policy are the contract. Pure: `Lineage` is a bounded
in-memory map of the candidates this verifier has seen.
"""

from __future__ import annotations

from collections import OrderedDict

from services.verifier.funnel import VerifyJob
from shared.messages import Candidate

# Candidates remembered for lineage lookups; a job explores tens to hundreds of versions.
MAX_REMEMBERED = 4096


class Lineage:
    def __init__(self, limit: int = MAX_REMEMBERED) -> None:
        self.seen: OrderedDict[str, Candidate] = OrderedDict()
        self.limit = limit

    def remember(self, c: Candidate) -> None:
        self.seen[c.id] = c
        self.seen.move_to_end(c.id)
        while len(self.seen) > self.limit:
            self.seen.popitem(last=False)

    def root(self, c: Candidate) -> Candidate:
        hops = 0
        while c.parent_id and c.parent_id in self.seen and hops < self.limit:
            c, hops = self.seen[c.parent_id], hops + 1
        return c

    def job(self, c: Candidate) -> VerifyJob:
        """The candidate's own file (`candidate_path`, where the planner wrote its source) is what is
        compiled, checked and timed; the root's `task_path` (the user's task) is the reference and policy;
        the parent's file at its config is the baseline (the task at its CONFIG for a first-round
        candidate). Until 2026-12-02 this read `task_path` alone, so a candidate whose source the
        planner had changed was measured as the original task under its config (H200 run r36: a
        tiled-transpose rewrite timed 1.000x, its static layer showing the original's 0 shared bytes)."""
        self.remember(c)
        parent = self.seen.get(c.parent_id) if c.parent_id else None
        root = self.root(c)
        own = candidate_file(c)
        return VerifyJob(
            candidate_id=c.id,
            kernel=c.kernel,
            task_path=root.task_path,
            candidate_path=None if own == root.task_path else own,
            candidate_sha256=c.source_sha256 if own != root.task_path else "",
            config=dict(c.config),
            parent_path=candidate_file(parent) if parent else None,
            parent_config=dict(parent.config) if parent else {},
            job_id=c.job_id,
            causation_id=c.id,
        )


def candidate_file(c: Candidate) -> str:
    """The file a candidate's source lives in: its own candidate file, or the task for a pure config change."""
    return c.candidate_path or c.task_path
