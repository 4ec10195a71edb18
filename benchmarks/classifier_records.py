"""Failure-classifier records from the recorded GPU jobs: every job file a ledger run keeps
(benchmarks/results/runs/<run>/steps/suite_loop/jobs/<task>.json, written by benchmarks/suite_loop.py from
`kpilot optimize`'s state), the older closed-loop job of benchmarks/results/h200/closed_loop_matmul.json,
and the LLM-planned candidates a ledger run timed through the funnel
(benchmarks/results/runs/<run>/steps/llm_timed/llm_timed.json, benchmarks/llm_timed.py).

A candidate is a record when the funnel finished it: its outcome is the first layer that failed it, or
`pass` when its full layer passed. A candidate with a `withdrawn` verdict (its job ended first), one whose
last verdict was `skipped` (no GPU), and one whose verdicts stop at a passed static or micro layer (the job's
budget ran out with it queued) are not records; `extract` says how many of each were dropped.
Features: services/planner/classifier.candidate_record (pattern ids from the rationales, change kinds,
config values), the one place that builds a candidate's record.

    python3 benchmarks/classifier_records.py [--jsonl OUT]   # counts; OUT: the records as JSONL
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from services.planner.classifier import Outcome, TrainingRecord, candidate_record, dump_jsonl
from shared.messages import ChangeDescription

LAYERS = ("static", "micro", "full")
RUN_JOBS = "benchmarks/results/runs/*/steps/suite_loop/jobs/*.json"
OTHER_JOBS = ("benchmarks/results/h200/closed_loop_matmul.json",)
# An LLM's candidates timed one by one through the same funnel (benchmarks/llm_timed.py): each row is a
# candidate the llm policy planned, with the funnel's layer statuses.
LLM_TIMED = "benchmarks/results/runs/*/steps/llm_timed/llm_timed.json"


class JobCandidate(msgspec.Struct, kw_only=True):
    version: int
    config: dict[str, int | float | str | bool] = {}
    changes: list[ChangeDescription] = []  # absent in the closed-loop job (recorded before changes were)
    llm: dict | None = None  # the plan's LLM usage; None: no LLM was asked


class JobVerdict(msgspec.Struct, kw_only=True):
    candidate_id: str
    layer: str
    status: str
    reasons: list[str] = []


class Measure(msgspec.Struct, kw_only=True):
    value: float | None = None


class JobPatch(msgspec.Struct, kw_only=True):
    subject: str
    candidate_id: str = ""
    speedup: Measure | None = None


class JobUpdate(msgspec.Struct, kw_only=True):
    status: str
    note: str = ""


class JobFile(msgspec.Struct, kw_only=True):
    """The part of a recorded job (services/kpilot/commands/planner.optimize's state) records need."""

    job_id: str
    status: str
    updates: list[JobUpdate] = []
    candidates: dict[str, JobCandidate] = {}
    verdicts: list[JobVerdict] = []
    patches: list[JobPatch] = []


class TimedRow(msgspec.Struct, kw_only=True):
    """One row of llm_timed.json: an LLM-planned candidate and what the funnel said about it."""

    task: str
    candidate: str
    rank: int = 1
    config: dict[str, int | float | str | bool] = {}
    changes: list[ChangeDescription] = []
    statuses: dict[str, str] = {}
    verified: bool = False
    speedup: float | None = None


class TimedFile(msgspec.Struct, kw_only=True):
    rows: list[TimedRow] = []


class JobRecord(msgspec.Struct, kw_only=True):
    run: str  # ledger run id ("r38"), or the results file for a job outside the ledger
    job: str  # the task file's name (the job file's stem)
    candidate_id: str
    version: int
    record: TrainingRecord
    verified_speedup: float | None  # the critic's verified patch for this candidate, if one was published
    llm: bool  # the plan that proposed it asked an LLM


class Dropped(msgspec.Struct, kw_only=True):
    run: str
    job: str
    candidate_id: str
    why: str  # "withdrawn", "skipped (unmeasured)", "unfinished after <layer> pass", "no verdict"


class Extraction(msgspec.Struct, kw_only=True):
    files: list[str]  # relative to the repo root
    records: list[JobRecord]
    dropped: list[Dropped]


def job_files(root: Path = ROOT) -> list[Path]:
    return sorted(root.glob(RUN_JOBS)) + [root / p for p in OTHER_JOBS if (root / p).is_file()]


def timed_files(root: Path = ROOT) -> list[Path]:
    return sorted(root.glob(LLM_TIMED))


def timed_rows(path: Path) -> list[TimedRow]:
    return msgspec.json.decode(path.read_bytes(), type=TimedFile).rows


def from_timed(path: Path, root: Path = ROOT) -> tuple[list[JobRecord], list[Dropped]]:
    """Records of an llm_timed.json: one per row the funnel finished, `job` = the task's stem (each row is
    its own planning context), llm = True."""
    run = run_of(path, root)
    records, dropped = [], []
    for row in timed_rows(path):
        job = Path(row.task).stem
        got = outcome([JobVerdict(candidate_id=row.candidate, layer=la, status=st)
                       for la, st in row.statuses.items() if la in LAYERS])
        if got not in ("pass", *LAYERS):
            dropped.append(Dropped(run=run, job=job, candidate_id=row.candidate, why=got))
            continue
        rec = candidate_record(row.changes, dict(row.config), got, f"{run}:{job}:{row.candidate}")  # type: ignore[arg-type]
        records.append(JobRecord(run=run, job=job, candidate_id=row.candidate, version=row.rank, record=rec,
                                 verified_speedup=row.speedup if row.verified else None, llm=True))
    return records, dropped


def run_of(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root).parts
    if rel[:3] == ("benchmarks", "results", "runs"):
        return rel[3]
    return "/".join(rel[2:-1] + (path.stem,))  # "h200/closed_loop_matmul"


def outcome(verdicts: list[JobVerdict]) -> Outcome | str:
    """The record's outcome, or why the candidate is not a record."""
    if any(v.status == "withdrawn" for v in verdicts):
        return "withdrawn"
    if not verdicts:
        return "no verdict"
    by_layer = sorted(verdicts, key=lambda v: LAYERS.index(v.layer))
    for v in by_layer:
        if v.status == "fail":
            return v.layer  # type: ignore[return-value]
        if v.status == "skipped":
            return "skipped (unmeasured)"
    last = by_layer[-1]
    return "pass" if last.layer == "full" else f"unfinished after {last.layer} pass"


def from_job(path: Path, root: Path = ROOT) -> tuple[list[JobRecord], list[Dropped]]:
    job = msgspec.json.decode(path.read_bytes(), type=JobFile)
    run = run_of(path, root)
    by_cand: dict[str, list[JobVerdict]] = {}
    for v in job.verdicts:
        by_cand.setdefault(v.candidate_id, []).append(v)
    verified = {p.candidate_id: p.speedup.value if p.speedup else None
                for p in job.patches if p.subject.startswith("patches.verified.")}
    records, dropped = [], []
    for cid, c in sorted(job.candidates.items(), key=lambda kv: kv[1].version):
        got = outcome(by_cand.get(cid, []))
        if got not in ("pass", *LAYERS):
            dropped.append(Dropped(run=run, job=path.stem, candidate_id=cid, why=got))
            continue
        rec = candidate_record(c.changes, dict(c.config), got, f"{run}:{path.stem}:{cid}")  # type: ignore[arg-type]
        records.append(JobRecord(run=run, job=path.stem, candidate_id=cid, version=c.version, record=rec,
                                 verified_speedup=verified.get(cid), llm=c.llm is not None))
    return records, dropped


def extract(root: Path = ROOT) -> Extraction:
    files = job_files(root) + timed_files(root)
    records: list[JobRecord] = []
    dropped: list[Dropped] = []
    for f in files:
        r, d = from_timed(f, root) if f.match(LLM_TIMED) else from_job(f, root)
        records += r
        dropped += d
    return Extraction(files=[str(f.relative_to(root)) for f in files], records=records, dropped=dropped)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jsonl", type=Path, help="write the TrainingRecords here (services.planner --jsonl)")
    args = ap.parse_args(argv)
    ex = extract()
    print(f"{len(ex.files)} job files, {len(ex.records)} records, {len(ex.dropped)} candidates dropped")
    if args.jsonl:
        dump_jsonl([r.record for r in ex.records], args.jsonl)
        print(f"-> {args.jsonl}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
