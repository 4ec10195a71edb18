from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from services.telemetry.dcgm_scrape import parse_exposition
from services.telemetry.records import LaunchRecord, RawSample
from services.telemetry.trace import Replayer, TraceError, TraceHeader, TraceWriter, read_trace, schedule

FIXTURE = Path(__file__).parent / "fixtures" / "dcgm_exporter_2xh200.prom"


def entries() -> list[RawSample | LaunchRecord]:
    g0 = parse_exposition(FIXTURE.read_text(), ts=100.0)[0]
    out: list[RawSample | LaunchRecord] = []
    for i in range(3):
        out.append(
            RawSample(
                ts=100.0 + 2.0 * i,
                node=g0.node,
                gpu=g0.gpu,
                gpu_name=g0.gpu_name,
                metrics=g0.metrics,
                clock_event_reasons=g0.clock_event_reasons,
                absent=g0.absent,
            )
        )
        out.append(
            LaunchRecord(
                kernel="matmul_kernel",
                launches=10 + i,
                t_first=100.0 + 2 * i,
                t_last=101.0 + 2 * i,
                grid=[64, 64, 1],
                config={"BLOCK_M": 32, "num_warps": 4},
                durations_us=[812.5],
            )
        )
    return out


def test_write_then_read_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    header = TraceHeader(created=1.0, node="gpu-node-1", note="fixture", provenance={"device": "none"})
    with TraceWriter(path, header) as w:
        w.write_all(entries())
    assert w.count == 6
    h, got = read_trace(path)
    assert h == header and got == entries()
    first = path.read_text().splitlines()[0]
    assert first.startswith('{"type":"header"')


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "empty trace"),
        ('{"type":"sample","ts":1,"node":"n","gpu":"g"}\n', "first line must be the header"),
        ('{"type":"header","created":1}\n{"type":"header","created":2}\n', "appear once"),
        ('{"type":"header","version":9,"created":1}\n', "trace version 9"),
        ('{"type":"header","created":1}\n{"type":"sample","ts":1}\n', r":2: not a trace line"),
        ('{"type":"header","created":1}\nnot json\n', r":2: not a trace line"),
    ],
)
def test_bad_traces_name_the_line(tmp_path: Path, text: str, match: str) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text(text)
    with pytest.raises(TraceError, match=match):
        read_trace(p)


def test_schedule_scales_the_original_spacing() -> None:
    delays = [d for d, _ in schedule(entries(), speed=2.0)]
    # sample 100, launch 101, sample 102, launch 103, ...: 1 s apart, halved
    assert delays == [0.0, 0.5, 0.5, 0.5, 0.5, 0.5]
    assert [d for d, _ in schedule(entries(), speed=float("inf"))] == [0.0] * 6
    with pytest.raises(ValueError, match="speed must be > 0"):
        list(schedule(entries(), speed=0))


def test_replayer_sleeps_and_rebases() -> None:
    slept: list[float] = []
    got = list(Replayer(entries(), speed=4.0, live=True, sleep=slept.append, clock=lambda: 1000.0))
    assert slept == [0.25] * 5
    assert [round(e.ts if isinstance(e, RawSample) else e.t_last, 6) for e in got] == [
        1000.0,
        1000.25,
        1000.5,
        1000.75,
        1001.0,
        1001.25,
    ]
    assert got[1].t_first == pytest.approx(1000.0)  # type: ignore[union-attr]
    plain = list(Replayer(entries(), speed=float("inf")))
    assert plain == entries()
    with pytest.raises(ValueError, match="finite speed"):
        Replayer(entries(), speed=float("inf"), live=True)


def test_async_replay_really_waits() -> None:
    async def main() -> tuple[int, float]:
        t0 = anyio.current_time()
        n = 0
        async for _ in Replayer(entries(), speed=50.0).aiter():  # 5 gaps of 1 s / 50 = 0.1 s
            n += 1
        return n, anyio.current_time() - t0

    n, took = anyio.run(main)
    assert n == 6 and 0.09 <= took < 1.0
