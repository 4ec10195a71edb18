"""The failure classifier (XGBoost) on records made by actually running the patcher and the planner's
static prune (shared-memory, register, thread and tile limits from GPU.md) on examples/matmul.py with
seeded random change descriptions. The outcome labels are what those checks answered, not the real
verifier's verdicts: no GPU or verifier funnel ran here, and the micro/full layers never occur. Records
from real jobs (FAILURES stream + jobs bucket) replace these once the stack has run on the H200.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from services.planner.classifier import (
    FailureGate,
    TrainingRecord,
    dump_jsonl,
    estimate_features,
    load_jsonl,
    train,
)
from services.planner.patcher import PatchRejected, TaskSource, apply_changes
from services.planner.search import Problem, prune_reasons
from shared.messages import ChangeDescription as C

pytest.importorskip("xgboost")
ROOT = Path(__file__).resolve().parents[2]


def _records(n: int, seed: int) -> list[TrainingRecord]:
    src = (ROOT / "examples/matmul.py").read_text()
    t = TaskSource(src)
    space, config = t.literal("SPACE"), t.literal("CONFIG")
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        changes = []
        for key in rng.sample(list(space), rng.randint(1, 4)):
            # one value in eight is off the SPACE grid, so the patcher's own checks get exercised too
            v = rng.choice(space[key]) if rng.random() > 0.125 else rng.choice([3, 6, 96, 512])
            kind = {"num_warps": "set_num_warps", "num_stages": "set_num_stages"}.get(key, "set_constexpr")
            changes.append(C(change=kind, target="" if kind != "set_constexpr" else key, value=v))
        if rng.random() < 0.2:
            changes.append(
                C(
                    change="source_edit",
                    search="acc = tl.dot(a, b, acc)",
                    replace=rng.choice(["acc = tl.dot(a, b, acc)  # same", "acc = tl.dot(a, b, acc"]),
                )
            )
        got = apply_changes(src, changes)
        p = Problem(
            config=config,
            space=space,
            full_shape={"m": 8192, "n": 8192, "k": 8192},
            dtype="bfloat16",
            dot=True,
        )
        cfg = config | {
            c.target or {"set_num_warps": "num_warps", "set_num_stages": "num_stages"}[c.change]: c.value
            for c in changes
            if c.change != "source_edit"
        }
        if isinstance(got, PatchRejected):
            outcome = "static"
        else:
            outcome = "static" if prune_reasons(got[1], p) else "pass"
        out.append(
            TrainingRecord(
                outcome=outcome,
                edit_kinds=[c.change for c in changes],
                features=estimate_features(cfg, p),
                source="patcher",
            )
        )
    return out


def test_trains_and_beats_the_majority_baseline_on_held_out_records(tmp_path: Path) -> None:
    records = _records(800, seed=1)
    classes = {o: sum(r.outcome == o for r in records) for o in ("pass", "static")}
    assert min(classes.values()) > 40  # both outcomes are well represented
    path = tmp_path / "recs.jsonl"
    dump_jsonl(records, path)
    assert load_jsonl(path) == records
    report = train(load_jsonl(path), tmp_path / "model.json", seed=0)
    assert report.held_out == 200 and report.accuracy is not None
    # Half of the source edits break the syntax and the features cannot see which (both are one
    # "source_edit"): ~10 % of labels are unpredictable by design, so 0.75 is the bar, not 0.9.
    assert report.accuracy >= 0.75 and report.accuracy > report.majority_baseline + 0.2, report

    gate = FailureGate(tmp_path / "model.json")
    p = Problem(config={}, space={}, full_shape={"m": 8192, "n": 8192, "k": 8192}, dtype="bfloat16", dot=True)
    # 256x256x128 tiles in 4 stages need 512 KB of shared memory: the model should be sure it fails.
    doomed = TrainingRecord(
        outcome="pass",
        edit_kinds=["set_constexpr"] * 3 + ["set_num_stages"],
        features=estimate_features(
            {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 8, "num_stages": 4}, p
        ),
    )
    fine = TrainingRecord(
        outcome="pass",
        edit_kinds=["set_constexpr"] * 3,
        features=estimate_features(
            {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 2}, p
        ),
    )
    assert 1 - gate.probabilities(doomed)["pass"] >= 0.85
    assert 1 - gate.probabilities(fine)["pass"] < 0.5


def test_too_few_records_are_reported_not_trained(tmp_path: Path) -> None:
    report = train(_records(5, seed=2), tmp_path / "m.json")
    assert report.accuracy is None and "not trained" in report.note
