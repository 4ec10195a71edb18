"""What an earlier `bench_decomposer_ncu.py` result holds for a later run: the counters it measured, which
run measured each case, and the cases that timed out when profiled alone. Pure reads of a result JSON;
stdlib only (the profiling shim imports the benchmark inside the sandbox).

A run that ran out of budget (H200 run r33 measured 61 of 126 cases in 280 s) is finished by a second run
with `--resume RESULT_JSON`: that run profiles only the cases this module says are unmeasured, re-scores the
earlier counters with the checkout's pattern library, and writes one whole-corpus report whose rows say
which run measured them (`measured_by`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BENCHMARK = "bench_decomposer_ncu"
NOT_IN_LEDGER = "not in a ledger run"  # benchmarks/ledger.py run_stamp() outside a ledger run
# What an ncu run that ran out of time says, in the words this benchmark writes for it: the ncu worker's
# own timeout (services/toolrunner/tools/ncu_profile/worker.py) and the sandbox's (profile_batch: "ncu worker timeout").
_TIMEOUT_WORDS = ("ncu timed out after", "ncu worker timeout")


class ResumeError(ValueError):
    """An earlier result this run cannot resume from; the message names the fix."""


def load(path: str | Path) -> dict[str, Any]:
    """The earlier result, checked to be this benchmark's."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except OSError as e:
        raise ResumeError(f"--resume {p}: cannot read it ({e}); give the --out JSON of an earlier run") from e
    except ValueError as e:
        raise ResumeError(f"--resume {p}: not JSON ({e}); give the --out JSON of an earlier run") from e
    if (
        not isinstance(doc, dict)
        or doc.get("benchmark") != BENCHMARK
        or not isinstance(doc.get("cases"), list)
    ):
        raise ResumeError(
            f"--resume {p}: not a {BENCHMARK} result (no 'benchmark': '{BENCHMARK}' and 'cases' list); "
            "give the --out JSON of an earlier bench_decomposer_ncu.py run"
        )
    return doc


def run_label(path: str | Path, doc: dict[str, Any]) -> str:
    """The earlier run's name: its own stamp's run id, else the id in the ledger.json of the recorded run
    it lies in (benchmarks/results/runs/<id>/, written by `ledger.py record`), else its path."""
    stamped = (doc.get("run_stamp") or {}).get("run_id")
    if stamped and stamped != NOT_IN_LEDGER:
        return str(stamped)
    for d in Path(path).resolve().parents:
        ledger = d / "ledger.json"
        if ledger.is_file():
            try:
                run_id = json.loads(ledger.read_text()).get("run_id")
            except (OSError, ValueError, AttributeError):
                break
            if run_id:
                return str(run_id)
            break
    return str(path)


def measured(doc: dict[str, Any], label: str) -> dict[str, tuple[dict[str, float], str]]:
    """case -> (its counters, the run that measured it) for every row that kept counters; a row resumed
    into `doc` from a run before it keeps that run's name."""
    return {
        r["case"]: (r["counters"], r.get("measured_by") or label)
        for r in doc["cases"]
        if isinstance(r.get("counters"), dict) and r["counters"]
    }


def is_timeout(reason: str) -> bool:
    return any(w in reason for w in _TIMEOUT_WORDS)


def timed_out_alone(doc: dict[str, Any]) -> dict[str, str]:
    """case -> its reason, for each unmeasured case whose ncu run of that case alone timed out: rows this
    benchmark flagged (`timed_out_alone`), a lone retry of a batch, and a batch of one case. A case that
    timed out only inside a batch is not named: any case of that batch may have held it."""
    out: dict[str, str] = {}
    for b in doc.get("batches", []):
        for c, r in (b.get("retried") or {}).items():
            if is_timeout(str(r.get("ncu", ""))):
                out[c] = str(r["ncu"])
        if len(b.get("cases", [])) == 1 and any(is_timeout(str(m)) for m in b.get("missed_because", [])):
            out[b["cases"][0]] = next(str(m) for m in b["missed_because"] if is_timeout(str(m)))
    for r in doc["cases"]:
        if r.get("timed_out_alone"):
            out[r["case"]] = str(r.get("ncu", "timed out alone"))
    done = set(measured(doc, ""))
    return {c: why for c, why in out.items() if c not in done}
