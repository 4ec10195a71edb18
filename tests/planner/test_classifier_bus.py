"""The classifier's training records from a real bus: a FailureRecord's measured speedups are evidence for
operators, never features, since the gate decides before any candidate is measured (a helper's review of
the H200 job records found training saw them)."""

from __future__ import annotations

from services.planner.classifier import records_from_bus
from shared.messages import FailureRecord
from shared.natsserver import EmbeddedServer
from shared.subjects import failure_subject
from tests.conftest import BusFactory


async def test_failure_records_train_without_what_the_verifier_measured(
    nats_server: EmbeddedServer, make_bus: BusFactory
) -> None:
    critic = await make_bus("critic")
    await critic.publish(failure_subject("k"), FailureRecord(
        source="critic", candidate_id="j-v1", kernel="k", layer="full", reason="no significant gain",
        pattern_ids=["k_loop_not_pipelined"], edit_kinds=["transform"],
        features={"speedup": 0.79, "speedup_low": 0.78, "max_speedup": 3.1, "cfg:BLOCK_M": 6.0}))
    (r,) = await records_from_bus(nats_server.url("operator"))
    assert r.outcome == "full" and r.pattern_ids == ["k_loop_not_pipelined"] and r.edit_kinds == ["transform"]
    assert r.features == {"cfg:BLOCK_M": 6.0}
