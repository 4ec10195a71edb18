"""The failure classifier: gradient-boosted trees (XGBoost) over what is known about a plan before it is
verified, predicting its outcome: pass, or the funnel layer it fails at (static / micro / full).

Features: pattern ids (one-hot), change kinds (counts), numeric features (config values as log2, IR and
state numbers the records carry). `P(fail) = 1 - P(pass)`; at or above the threshold (0.85 default) the
planner skips the LLM for that context and plans with rules (loop.Planner's gate).

Records come from the FAILURES stream (critic's FailureRecords: failed at `layer`) and from job states in
the `jobs` KV bucket (attempts that passed), or from a JSONL file of `TrainingRecord`s.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Literal

import msgspec

Outcome = Literal["pass", "static", "micro", "full"]
OUTCOMES: tuple[Outcome, ...] = ("pass", "static", "micro", "full")
THRESHOLD = 0.85  # the default: skip the LLM only when failure is very likely
HELD_OUT = 0.25  # share of records kept out of training for the accuracy report
# 60 shallow trees: a few hundred records of ~30 features saturate there (held-out accuracy stops moving
# between 40 and 100 rounds on the patcher-generated set in tests/planner/test_classifier.py).
ROUNDS = 60
PARAMS = {
    "objective": "multi:softprob",
    "num_class": len(OUTCOMES),
    "max_depth": 4,
    "eta": 0.2,
    "subsample": 1.0,
    "eval_metric": "mlogloss",
    "nthread": 1,
}


class TrainingRecord(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    outcome: Outcome
    pattern_ids: list[str] = []
    edit_kinds: list[str] = []
    features: dict[str, float] = {}
    source: str = ""  # where it came from: "failures", "jobs", "patcher", a file name


class Vocabulary(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    patterns: list[str]
    edits: list[str]
    numeric: list[str]

    @property
    def names(self) -> list[str]:
        return (
            [f"p:{p}" for p in self.patterns]
            + [f"e:{e}" for e in self.edits]
            + [f"f:{n}" for n in self.numeric]
        )

    def row(self, r: TrainingRecord) -> list[float]:
        pats = set(r.pattern_ids)
        return (
            [1.0 if p in pats else 0.0 for p in self.patterns]
            + [float(r.edit_kinds.count(e)) for e in self.edits]
            + [float(r.features.get(n, math.nan)) for n in self.numeric]
        )


class TrainReport(msgspec.Struct, kw_only=True):
    records: int
    train: int
    held_out: int
    accuracy: float | None  # on the held-out records
    majority_baseline: float | None  # accuracy of always answering the commonest outcome
    classes: dict[str, int]
    model_path: str
    note: str = ""

    def summary(self) -> dict:
        return msgspec.to_builtins(self)


def vocabulary(records: list[TrainingRecord]) -> Vocabulary:
    return Vocabulary(
        patterns=sorted({p for r in records for p in r.pattern_ids}),
        edits=sorted({e for r in records for e in r.edit_kinds}),
        numeric=sorted({k for r in records for k in r.features}),
    )


def fit(records: list[TrainingRecord], *, seed: int = 0) -> tuple[object, Vocabulary]:
    """The booster and its vocabulary, trained on all of `records` (`train` holds some out first)."""
    import numpy as np
    import xgboost as xgb

    vocab = vocabulary(records)
    x = np.array([vocab.row(r) for r in records], dtype=np.float32)
    y = np.array([OUTCOMES.index(r.outcome) for r in records])
    booster = xgb.train(PARAMS | {"seed": seed}, xgb.DMatrix(x, label=y, feature_names=vocab.names), ROUNDS)
    return booster, vocab


def train(records: list[TrainingRecord], out: Path, *, seed: int = 0) -> TrainReport:
    import numpy as np
    import xgboost as xgb

    classes = {o: sum(r.outcome == o for r in records) for o in OUTCOMES}
    if len(records) < 8 or sum(1 for v in classes.values() if v) < 2:
        return TrainReport(
            records=len(records),
            train=0,
            held_out=0,
            accuracy=None,
            majority_baseline=None,
            classes=classes,
            model_path="",
            note="not trained: need >= 8 records of >= 2 outcomes (run some jobs first, or pass --jsonl)",
        )
    order = list(range(len(records)))
    random.Random(seed).shuffle(order)
    cut = max(1, int(len(order) * HELD_OUT))
    test_i, train_i = order[:cut], order[cut:]
    booster, vocab = fit([records[i] for i in train_i], seed=seed)
    x = np.array([vocab.row(r) for r in records], dtype=np.float32)
    y = np.array([OUTCOMES.index(r.outcome) for r in records])
    pred = booster.predict(xgb.DMatrix(x[test_i], feature_names=vocab.names)).argmax(axis=1)
    acc = float((pred == y[test_i]).mean())
    common = max(set(y[train_i].tolist()), key=y[train_i].tolist().count)
    out.parent.mkdir(parents=True, exist_ok=True)
    booster.save_model(str(out))
    out.with_suffix(".vocab.json").write_bytes(msgspec.json.encode(vocab))
    return TrainReport(
        records=len(records),
        train=len(train_i),
        held_out=len(test_i),
        accuracy=round(acc, 4),
        majority_baseline=round(float((y[test_i] == common).mean()), 4),
        classes=classes,
        model_path=str(out),
    )


class FailureGate:
    """`failure_probability(context)` for loop.Planner: 1 - P(pass) of the trained model."""

    def __init__(self, model: Path) -> None:
        import xgboost as xgb

        self.booster = xgb.Booster()
        self.booster.load_model(str(model))
        self.vocab = msgspec.json.decode(model.with_suffix(".vocab.json").read_bytes(), type=Vocabulary)

    @classmethod
    def fitted(cls, records: list[TrainingRecord], *, seed: int = 0) -> FailureGate:
        """A gate over a model trained in memory on `records` (no file): for held-out evaluations."""
        gate = cls.__new__(cls)
        gate.booster, gate.vocab = fit(records, seed=seed)
        return gate

    def probabilities(self, r: TrainingRecord) -> dict[str, float]:
        import numpy as np
        import xgboost as xgb

        x = np.array([self.vocab.row(r)], dtype=np.float32)
        p = self.booster.predict(xgb.DMatrix(x, feature_names=self.vocab.names))[0]
        return {o: float(v) for o, v in zip(OUTCOMES, p, strict=True)}

    def failure_probability(self, ctx: object) -> float | None:
        r = record_from_context(ctx)
        return 1.0 - self.probabilities(r)["pass"]


def config_features(config: dict) -> dict[str, float]:
    return {
        f"cfg:{k}": math.log2(v)
        for k, v in config.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and v > 0
    }


def estimate_features(config: dict, problem: object) -> dict[str, float]:
    """Config values plus the search's static estimates (shared bytes, registers, threads, waves): what the
    planner knows about a config before anything compiles (services/planner/search.py)."""
    from services.planner.search import estimate

    out = config_features(config)
    try:
        e = estimate(config, problem)  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return out
    out |= {
        "est:log2_smem": math.log2(e.smem_bytes + 1),
        "est:regs": float(e.regs),
        "est:threads": float(e.threads),
        "est:blocks_per_sm": float(e.blocks_per_sm),
    }
    if e.waves is not None:
        out["est:waves"] = e.waves
    return out


# Measured by the verifier, after the fact: a FailureRecord carries them as evidence, but the gate decides
# before any candidate exists, so training on them would teach it answers it never has.
MEASURED_AFTER = ("speedup", "speedup_low", "max_speedup")


def known_before(features: dict[str, float]) -> dict[str, float]:
    """The features of a record that the gate can also know before planning."""
    return {k: v for k, v in features.items() if k not in MEASURED_AFTER}


def candidate_record(changes: list, config: dict, outcome: Outcome, source: str) -> TrainingRecord:
    """A verified candidate as a record: the patterns its rationales name, its change kinds, its config."""
    return TrainingRecord(
        outcome=outcome,
        pattern_ids=list(dict.fromkeys(p for c in changes for p in c.patterns())),
        edit_kinds=[c.change for c in changes],
        features=config_features(config),
        source=source,
    )


def record_from_context(ctx: object) -> TrainingRecord:
    """What is known before the LLM answers: findings, the kinds of change they call for, the best config."""
    from services.planner.search import Problem

    findings = getattr(ctx, "findings", [])
    kinds = [k for f in findings[:3] for k in f.transformations]
    task = getattr(ctx, "task", None)
    cfg = dict(getattr(ctx, "best_config", {}))
    feats = config_features(cfg)
    if task is not None:
        feats = estimate_features(
            cfg,
            Problem(
                config=cfg,
                space=task.space,
                full_shape=task.shapes.get("full", {}),
                dtype=task.dtype,
                dot=bool(getattr(ctx, "has_dot", False)),
            ),
        )
    return TrainingRecord(
        outcome="pass", pattern_ids=[f.pattern for f in findings], edit_kinds=kinds, features=feats
    )


def load_jsonl(path: Path) -> list[TrainingRecord]:
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                out.append(msgspec.json.decode(line, type=TrainingRecord))
            except msgspec.ValidationError as e:
                raise ValueError(
                    f"{path}:{n}: not a TrainingRecord ({e}); each line is "
                    '{"outcome": "pass"|"static"|"micro"|"full", "edit_kinds": [...], ...}'
                ) from e
    return out


async def records_from_bus(url: str, max_msgs: int = 100_000) -> list[TrainingRecord]:
    """FailureRecords from the FAILURES stream, plus passed attempts of every job in the `jobs` bucket."""
    import nats.errors
    import nats.js.errors

    from services.planner import jobs
    from shared.bus import Bus
    from shared.messages import FailureRecord, decode

    bus = await Bus.connect(url, "kpilot")
    out: list[TrainingRecord] = []
    try:
        sub = await bus.js.subscribe("failures.>", ordered_consumer=True)
        for _ in range(max_msgs):
            try:
                m = await sub.next_msg(timeout=1.0)
            except nats.errors.TimeoutError:
                break
            msg = decode(m.data)
            if isinstance(msg, FailureRecord):
                out.append(
                    TrainingRecord(
                        outcome=msg.layer,
                        pattern_ids=msg.pattern_ids,
                        edit_kinds=msg.edit_kinds,
                        features=known_before(msg.features),
                        source="failures",
                    )
                )
        await sub.unsubscribe()
        kv = await bus.js.key_value("jobs")
        try:
            keys = await kv.keys()
        except nats.js.errors.NoKeysError:
            keys = []
        for k in keys:
            s = jobs.decode_state((await kv.get(k)).value or b"{}")
            for a in jobs.attempts(s):
                if a.status == "pass":
                    out.append(candidate_record(a.changes, a.config, "pass", "jobs"))
    finally:
        await bus.close()
    return out


def dump_jsonl(records: list[TrainingRecord], path: Path) -> None:
    path.write_text("".join(json.dumps(msgspec.to_builtins(r)) + "\n" for r in records))
