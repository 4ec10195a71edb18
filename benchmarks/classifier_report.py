"""The failure classifier on the real GPU job records (benchmarks/classifier_records.py): record counts,
held-out accuracy against the majority baseline, and what the planner's gate (classifier.THRESHOLD) would
have skipped on those jobs. Everything is computed from the recorded job files; writes
benchmarks/results/h200/classifier.{json,md} (tests/benchmarks/test_classifier_report.py: no drift).

    python3 benchmarks/classifier_report.py [--out DIR]

Held-out accuracy three ways, each against the commonest outcome of the same training fold:
leave-one-out over records; leave-one-job-out (a job's candidates share task, patterns and often the
very same change, so a record's twin in the training fold flatters leave-one-out); and the classifier's
own `train` (a 25 % held-out split) over SEEDS seeds, with the spread.
The gate: each job's planning context (the patterns its candidates name, their change kinds, the start
config) scored by a model trained on the other jobs only; P(fail) >= THRESHOLD is a skip.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.classifier_records import Extraction, JobRecord, extract
from services.planner.classifier import (
    OUTCOMES,
    THRESHOLD,
    FailureGate,
    TrainingRecord,
    config_features,
    train,
)

SEEDS = 20
OUT = ROOT / "benchmarks/results/h200"
CONFIG_KINDS = ("set_constexpr", "set_num_warps", "set_num_stages", "set_maxnreg")


class HeldOut(msgspec.Struct, kw_only=True):
    method: str
    folds: int
    predictions: int
    correct: int
    accuracy: float | None
    baseline_correct: int
    majority_baseline: float | None
    spread: str = ""  # repeated splits: min..max of accuracy and baseline


class Context(msgspec.Struct, kw_only=True):
    run: str
    job: str
    candidates: int  # all the job's candidates (finished or not)
    llm_candidates: int
    p_fail: float | None  # None: the other jobs' records are one outcome or too few
    skipped: bool
    verified: list[float]  # speedups of the job's verified patches


class Report(msgspec.Struct, kw_only=True):
    files: list[str]
    records: int
    by_outcome: dict[str, int]
    by_run: dict[str, dict[str, int]]
    dropped: dict[str, int]
    dropped_withdrawn: int
    held_out: list[HeldOut]
    threshold: float
    contexts: list[Context]
    notes: list[str]


def _majority(train_recs: list[TrainingRecord]) -> str:
    counts = Counter(r.outcome for r in train_recs)
    return max(OUTCOMES, key=lambda o: (counts[o], -OUTCOMES.index(o)))


def _predict(train_recs: list[TrainingRecord], test: list[TrainingRecord]) -> list[str] | None:
    if len({r.outcome for r in train_recs}) < 2:
        return None  # one outcome: the model is the majority baseline
    gate = FailureGate.fitted(train_recs)
    return [max(OUTCOMES, key=gate.probabilities(r).__getitem__) for r in test]


def _folds(method: str, recs: list[JobRecord], groups: list[list[int]]) -> HeldOut:
    n = correct = base = 0
    for test_i in groups:
        train_recs = [r.record for i, r in enumerate(recs) if i not in test_i]
        test = [recs[i].record for i in test_i]
        pred = _predict(train_recs, test) or [_majority(train_recs)] * len(test)
        common = _majority(train_recs)
        n += len(test)
        correct += sum(p == r.outcome for p, r in zip(pred, test, strict=True))
        base += sum(common == r.outcome for r in test)
    return HeldOut(method=method, folds=len(groups), predictions=n, correct=correct,
                   accuracy=round(correct / n, 4) if n else None, baseline_correct=base,
                   majority_baseline=round(base / n, 4) if n else None)


def _splits(recs: list[TrainingRecord]) -> HeldOut:
    accs, bases, n = [], [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(SEEDS):
            t = train(recs, Path(tmp) / "m.json", seed=seed)
            if t.accuracy is None or t.majority_baseline is None:
                return HeldOut(method=f"classifier.train, {SEEDS} seeds", folds=0, predictions=0, correct=0,
                               accuracy=None, baseline_correct=0, majority_baseline=None, spread=t.note)
            accs.append(t.accuracy)
            bases.append(t.majority_baseline)
            n = t.held_out
    correct = round(sum(accs) * n)
    base = round(sum(bases) * n)
    return HeldOut(method=f"classifier.train (25 % held out), {SEEDS} seeds", folds=SEEDS,
                   predictions=n * SEEDS, correct=correct, accuracy=round(correct / (n * SEEDS), 4),
                   baseline_correct=base, majority_baseline=round(base / (n * SEEDS), 4),
                   spread=f"{n} held out per seed; accuracy {min(accs):.2f}..{max(accs):.2f}, "
                          f"baseline {min(bases):.2f}..{max(bases):.2f}")


def context_record(job: Path) -> TrainingRecord:
    """What the planner knew when it planned the job: the patterns its candidates name (the findings),
    their change kinds, the start config (a candidate's with no config change)."""
    from benchmarks.classifier_records import JobFile

    jf = msgspec.json.decode(job.read_bytes(), type=JobFile)
    cands = sorted(jf.candidates.values(), key=lambda c: c.version)
    changes = [ch for c in cands for ch in c.changes]
    start = next((c.config for c in cands if c.changes and not any(ch.change in CONFIG_KINDS for ch in c.changes)),
                 {})
    return TrainingRecord(outcome="pass", pattern_ids=list(dict.fromkeys(p for ch in changes for p in ch.patterns())),
                          edit_kinds=list(dict.fromkeys(ch.change for ch in changes)),
                          features=config_features(dict(start)), source=str(job))


def llm_contexts(ex: Extraction, path: Path, root: Path) -> list[Context]:
    """The gate on the contexts an LLM really planned (an llm_timed.json: one row per context): the
    planner's own record of the context (classifier.record_from_context on the context bench_llm gave the
    model, tests/fixtures/llm/contexts.py), scored by a model trained on every other job's records."""
    from benchmarks.classifier_records import run_of, timed_rows
    from services.planner.classifier import record_from_context
    from tests.fixtures.llm.contexts import task_context

    run, out = run_of(path, root), []
    for row in timed_rows(path):
        job = Path(row.task).stem
        others = [r.record for r in ex.records if (r.run, r.job) != (run, job)]
        p = None
        if len({r.outcome for r in others}) >= 2:
            rec = record_from_context(task_context(row.task))
            p = round(1.0 - FailureGate.fitted(others).probabilities(rec)["pass"], 4)
        out.append(Context(run=run, job=job, candidates=1, llm_candidates=1, p_fail=p,
                           skipped=p is not None and p >= THRESHOLD,
                           verified=[round(row.speedup, 3)] if row.verified and row.speedup else []))
    return out


def contexts(ex: Extraction, root: Path) -> list[Context]:
    from benchmarks.classifier_records import LLM_TIMED, JobFile, run_of

    out = []
    for f in ex.files:
        path = root / f
        if path.match(LLM_TIMED):
            out += llm_contexts(ex, path, root)
            continue
        run, job = run_of(path, root), path.stem
        others = [r.record for r in ex.records if (r.run, r.job) != (run, job)]
        jf = msgspec.json.decode(path.read_bytes(), type=JobFile)
        p = None
        if len({r.outcome for r in others}) >= 2:
            p = round(1.0 - FailureGate.fitted(others).probabilities(context_record(path))["pass"], 4)
        out.append(Context(
            run=run, job=job, candidates=len(jf.candidates),
            llm_candidates=sum(c.llm is not None for c in jf.candidates.values()), p_fail=p,
            skipped=p is not None and p >= THRESHOLD,
            verified=[round(x.speedup.value, 3) for x in jf.patches
                      if x.subject.startswith("patches.verified.") and x.speedup and x.speedup.value]))
    return out


def report(root: Path = ROOT) -> Report:
    ex = extract(root)
    recs = ex.records
    by_run: dict[str, dict[str, int]] = {}
    for r in recs:
        by_run.setdefault(r.run, dict.fromkeys(OUTCOMES, 0))[r.record.outcome] += 1
    jobs = sorted({(r.run, r.job) for r in recs})
    held = [
        _folds("leave-one-out (records)", recs, [[i] for i in range(len(recs))]),
        _folds("leave-one-job-out", recs, [[i for i, r in enumerate(recs) if (r.run, r.job) == j] for j in jobs]),
        _splits([r.record for r in recs]),
    ]
    ctx = contexts(ex, root)
    llm = sum(c.llm_candidates for c in ctx)
    skipped = [c for c in ctx if c.skipped]
    llm_ctx = [c for c in ctx if c.llm_candidates]
    llm_skip = [c for c in llm_ctx if c.skipped]
    llm_recs = {(r.run, r.job): r.record.outcome for r in recs if r.llm}
    notes = [
        (f"{len(recs)} records from {len(ex.files)} job files of {len(jobs)} jobs: too few for a claim about "
        "the classifier; the accuracies below are what these records show, with their counts, not an "
        "estimate of how it does on the next job."),
        (f"{llm} of {sum(c.candidates for c in ctx)} recorded candidates were planned with an LLM, all in "
        "llm_timed runs (one LLM candidate per suite context, timed through the funnel); every recorded job "
        "ran the rules policy. In a rules job a skip sends the context to rules, which is what the job did, "
        "so a skip there loses nothing."),
        (f"gate on the {len(llm_ctx)} contexts an LLM planned: {len(llm_skip)} skipped "
        f"({sum(c.p_fail is None for c in llm_ctx)} not scored); a skip loses the LLM's verified gains there "
        f"({', '.join(f'{c.job} {x:.2f}x' for c in llm_skip for x in c.verified) or 'none'}) and saves the "
        f"LLM call and the funnel's time for the candidates that failed "
        f"({sum(llm_recs.get((c.run, c.job)) not in (None, 'pass') for c in llm_skip)} of the skipped); "
        f"not skipped: {sum(bool(c.verified) for c in llm_ctx if not c.skipped)} verified, "
        f"{sum(llm_recs.get((c.run, c.job)) not in (None, 'pass') for c in llm_ctx if not c.skipped)} failed."),
        (f"gate: {len(skipped)} of {len(ctx)} contexts at P(fail) >= {THRESHOLD} "
        f"({sum(bool(c.verified) for c in skipped)} of them had a verified patch); "
        f"{sum(c.p_fail is None for c in ctx)} not scored (the other jobs' records had one outcome)."),
    ]
    return Report(files=ex.files, records=len(recs),
                  by_outcome={o: sum(r.record.outcome == o for r in recs) for o in OUTCOMES},
                  by_run=by_run, dropped=dict(sorted(Counter(d.why for d in ex.dropped).items())),
                  dropped_withdrawn=sum(d.why == "withdrawn" for d in ex.dropped), held_out=held,
                  threshold=THRESHOLD, contexts=ctx, notes=notes)


def markdown(r: Report) -> str:
    out = ["# Failure classifier on the recorded GPU jobs", "",
           ("Regenerated by `python3 benchmarks/classifier_report.py` from the job files below "
           "(benchmarks/classifier_records.py extracts the records)."), ""]
    out += [f"- {n}" for n in r.notes] + [""]
    out += ["## Records", "", "| run | " + " | ".join(OUTCOMES) + " |", "|---|" + "---|" * len(OUTCOMES)]
    out += [f"| {run} | " + " | ".join(str(c[o]) for o in OUTCOMES) + " |" for run, c in r.by_run.items()]
    out += [f"| all ({r.records}) | " + " | ".join(str(r.by_outcome[o]) for o in OUTCOMES) + " |", ""]
    out += ["Not records (candidates the funnel did not finish): "
            + ", ".join(f"{n} {why}" for why, n in r.dropped.items()) + f"; {r.dropped_withdrawn} withdrawn.", ""]
    out += ["## Held-out accuracy", "", "| method | folds | predictions | classifier | majority baseline | spread |",
            "|---|---|---|---|---|---|"]
    for h in r.held_out:
        acc = f"{h.accuracy:.3f} ({h.correct}/{h.predictions})" if h.accuracy is not None else "-"
        base = (f"{h.majority_baseline:.3f} ({h.baseline_correct}/{h.predictions})"
                if h.majority_baseline is not None else "-")
        out.append(f"| {h.method} | {h.folds} | {h.predictions} | {acc} | {base} | {h.spread} |")
    out += ["", f"## Gate (skip the LLM at P(fail) >= {r.threshold}), model trained on the other jobs", "",
            "| run | job | candidates | LLM-planned | P(fail) | skipped | verified speedups |", "|---|---|---|---|---|---|---|"]
    for c in r.contexts:
        p = f"{c.p_fail:.3f}" if c.p_fail is not None else "not scored"
        v = ", ".join(f"{x:.2f}x" for x in c.verified) or "none"
        out.append(f"| {c.run} | {c.job} | {c.candidates} | {c.llm_candidates} | {p} | "
                   f"{'yes' if c.skipped else 'no'} | {v} |")
    out += ["", "Files: " + ", ".join(f"`{f}`" for f in r.files), ""]
    return "\n".join(out)


def write(out: Path, r: Report) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "classifier.json").write_bytes(msgspec.json.format(msgspec.json.encode(r), indent=1) + b"\n")
    (out / "classifier.md").write_text(markdown(r))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    r = report()
    write(args.out, r)
    print(markdown(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
