"""Conversions between telemetry's records (records.py) and their bus messages (shared.messages).

RawSample <-> DeviceSample (`telemetry.samples.<node>.<gpu>`), LaunchRecord <-> LaunchStat inside a
LaunchBatch (`telemetry.launches.<node>`). The shapes match field for field; shared/ cannot import
services/, so the message types are their own Structs and these functions copy between them.
"""

from __future__ import annotations

from collections.abc import Iterable

from services.telemetry.records import LaunchRecord, RawMetric, RawSample
from shared.messages import DeviceSample, LaunchBatch, LaunchStat, SampleMetric


def sample_message(s: RawSample, *, source: str, origin: str = "", period_s: float = 0.0) -> DeviceSample:
    return DeviceSample(
        source=source,
        node=s.node,
        gpu=s.gpu,
        sampled_at=s.ts,
        gpu_name=s.gpu_name,
        window_s=s.window_s,
        period_s=period_s,
        metrics=[
            SampleMetric(resource=m.resource, value=m.value, unit=m.unit, source=m.source, space=m.space)
            for m in s.metrics
        ],
        clock_event_reasons=s.clock_event_reasons,
        absent=list(s.absent),
        origin=origin,
    )


def raw_sample(msg: DeviceSample) -> RawSample:
    return RawSample(
        ts=msg.sampled_at,
        node=msg.node,
        gpu=msg.gpu,
        gpu_name=msg.gpu_name,
        window_s=msg.window_s,
        metrics=[
            RawMetric(resource=m.resource, value=m.value, unit=m.unit, source=m.source, space=m.space)
            for m in msg.metrics
        ],
        clock_event_reasons=msg.clock_event_reasons,
        absent=list(msg.absent),
    )


def launch_batch(
    records: Iterable[LaunchRecord], *, node: str, source: str, pid: int = 0, dropped: int = 0
) -> LaunchBatch:
    return LaunchBatch(
        source=source,
        node=node,
        pid=pid,
        dropped=dropped,
        records=[
            LaunchStat(
                kernel=r.kernel,
                launches=r.launches,
                t_first=r.t_first,
                t_last=r.t_last,
                gpu=r.gpu,
                grid=list(r.grid),
                config=dict(r.config),
                durations_us=list(r.durations_us),
            )
            for r in records
        ],
    )


def launch_records(batch: LaunchBatch) -> list[LaunchRecord]:
    return [
        LaunchRecord(
            kernel=r.kernel,
            launches=r.launches,
            t_first=r.t_first,
            t_last=r.t_last,
            gpu=r.gpu,
            grid=list(r.grid),
            config=dict(r.config),
            durations_us=list(r.durations_us),
        )
        for r in batch.records
    ]
