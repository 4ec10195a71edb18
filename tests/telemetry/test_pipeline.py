"""The service's per-message logic and the record <-> message conversions (pure, no NATS).

Samples are synthetic test input built by tests/telemetry/helpers.py with values stated in the test; they
exercise the detector path and are not measurements.
"""

from __future__ import annotations

import msgspec

from services.telemetry.pipeline import Pipeline
from services.telemetry.records import LaunchRecord
from services.telemetry.wire import launch_batch, launch_records, raw_sample, sample_message
from shared.messages import StateChangeEvent, StateVector, decode, encode
from tests.telemetry.helpers import sample


def _gemm_launches(t: float, gpu: str = "") -> list[LaunchRecord]:
    return [LaunchRecord(kernel="matmul_kernel", launches=100, t_first=t - 4.0, t_last=t - 1.0, gpu=gpu,
                         grid=[64, 64, 1], config={"BLOCK_M": 32, "num_warps": 4}, durations_us=[800.0])]


def test_wire_round_trips_samples_and_launches() -> None:
    s = sample(10.0, reasons=["sw_power_cap"], tensor_core_util=11.0, sm_active=95.0)
    msg = sample_message(s, source="t", origin="replay:x", period_s=5.0)
    back = decode(encode(msg))
    assert raw_sample(back) == s and back.sampled_at == 10.0 and back.period_s == 5.0  # type: ignore[union-attr]
    records = _gemm_launches(10.0, gpu="GPU-0")
    batch = launch_batch(records, node="n0", source="t", pid=7)
    assert launch_records(decode(encode(batch))) == records  # type: ignore[arg-type]


def _run(pipe: Pipeline, node: str, tc: float, until: float, gpu: str = "GPU-0") -> list[StateChangeEvent]:
    events = []
    for i in range(int(until / 5) + 1):
        t = 5.0 * i
        s = msgspec.structs.replace(sample(t, gpu=gpu, tensor_core_util=tc, sm_active=95.0), node=node)
        for _, m in pipe.on_sample(sample_message(s, source="t", period_s=5.0)):
            if isinstance(m, StateChangeEvent):
                events.append(m)
    return events


def test_subjects_causation_and_launches_stay_on_their_node() -> None:
    pipe = Pipeline(period_s=5.0)
    for i in range(10):  # launch records only for node a; node b's GPU sees no hot kernel
        pipe.add_launches(launch_batch(_gemm_launches(5.0 * i), node="a", source="t"))
    s = sample(0.0, tensor_core_util=10.0, sm_active=95.0)
    out = pipe.on_sample(sample_message(msgspec.structs.replace(s, node="a.b"), source="t", period_s=5.0))
    (subject, vector), = out
    assert subject == "telemetry.state.a_b.GPU-0" and isinstance(vector, StateVector)
    ev_a = _run(pipe, "a", tc=10.0, until=40.0)
    ev_b = _run(pipe, "b", tc=10.0, until=40.0)
    assert [(e.event, e.edge) for e in ev_a] == [("tc_underutilization", "start")]
    assert ev_a[0].hot_kernels[0].kernel == "matmul_kernel"
    assert ev_b == []  # node b ran no GEMM: the rule does not apply there


def test_event_causation_walks_back_to_the_sample() -> None:
    pipe = Pipeline(period_s=5.0)
    seen: dict[str, object] = {}
    for i in range(8):
        t = 5.0 * i
        pipe.add_launches(launch_batch(_gemm_launches(t), node="n0", source="t"))
        msg = sample_message(sample(t, tensor_core_util=10.0, sm_active=95.0), source="t", period_s=5.0)
        for subject, m in pipe.on_sample(msg):
            seen[m.id] = (subject, m, msg.id)
    events = [v for v in seen.values() if isinstance(v[1], StateChangeEvent)]  # type: ignore[index]
    assert len(events) == 1
    subject, ev, _ = events[0]
    assert subject == "events.state.tc_underutilization.n0.GPU-0"
    _, vector, sample_id = seen[ev.causation_id]  # type: ignore[misc]
    assert isinstance(vector, StateVector) and vector.causation_id == sample_id


def test_stale_and_repeated_samples_are_dropped_and_counted() -> None:
    pipe = Pipeline(period_s=5.0)
    first = sample_message(sample(10.0, sm_active=90.0), source="t")
    assert pipe.on_sample(first)
    assert pipe.on_sample(first) == []  # a redelivery
    assert pipe.on_sample(sample_message(sample(5.0, sm_active=90.0), source="t")) == []
    assert pipe.on_sample(sample_message(sample(15.0, sm_active=90.0), source="t"))
    assert (pipe.stats.samples, pipe.stats.stale, pipe.stats.vectors) == (2, 2, 2)
