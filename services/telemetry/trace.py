"""Recorded telemetry traces: JSON lines of samples and launch records, and their replay.

File format (one JSON object per line, UTF-8):
    {"type": "header", "version": 1, "created": <epoch s>, "node": ..., "note": ..., "provenance": {...}}
    {"type": "sample", "ts": ..., "node": ..., "gpu": ..., "metrics": [...], ...}     # a RawSample
    {"type": "launch", "kernel": ..., "launches": ..., "t_last": ..., ...}            # a LaunchRecord
The header comes first; samples and launches follow in time order (a launch record's time is t_last).
Replay yields entries with their original spacing divided by `speed`, optionally shifted to "now" so
downstream consumers see live-looking timestamps.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Self

import anyio
import msgspec

from services.telemetry.records import LaunchRecord, RawSample

TRACE_VERSION = 1


class TraceHeader(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, tag="header", tag_field="type"):
    version: int = TRACE_VERSION
    created: float
    node: str = ""
    note: str = ""
    provenance: dict[str, str] = {}  # device, driver, cuda, triton, torch, method (GPU.md "Timing method")


Entry = RawSample | LaunchRecord
_Line = TraceHeader | RawSample | LaunchRecord
_decoder = msgspec.json.Decoder(_Line)
_encoder = msgspec.json.Encoder()


class TraceError(ValueError):
    """A trace file that cannot be read; the message names the file and line."""


def entry_ts(e: Entry) -> float:
    return e.ts if isinstance(e, RawSample) else e.t_last


class TraceWriter:
    """Appends entries to a trace file, header first. Use as a context manager; each line is flushed."""

    def __init__(self, path: str | Path, header: TraceHeader) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f: IO[bytes] = self.path.open("wb")
        self._write(header)
        self.count = 0

    def _write(self, obj: _Line) -> None:
        self._f.write(_encoder.encode(obj) + b"\n")
        self._f.flush()

    def write(self, entry: Entry) -> None:
        self._write(entry)
        self.count += 1

    def write_all(self, entries: Iterable[Entry]) -> None:
        for e in entries:
            self.write(e)

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def read_trace(path: str | Path) -> tuple[TraceHeader, list[Entry]]:
    """The header and entries of a trace file. Blank lines are skipped; anything else wrong is a
    TraceError naming the line."""
    p = Path(path)
    header: TraceHeader | None = None
    entries: list[Entry] = []
    with p.open("rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = _decoder.decode(line)
            except msgspec.DecodeError as e:
                raise TraceError(f"{p}:{n}: not a trace line ({e})") from e
            if isinstance(obj, TraceHeader):
                if header is not None or entries:
                    raise TraceError(f"{p}:{n}: a header must be the first line and appear once")
                if obj.version != TRACE_VERSION:
                    raise TraceError(
                        f"{p}:{n}: trace version {obj.version}, this reader knows {TRACE_VERSION}"
                    )
                header = obj
            elif header is None:
                raise TraceError(f'{p}:{n}: the first line must be the header ({{"type": "header", ...}})')
            else:
                entries.append(obj)
    if header is None:
        raise TraceError(f"{p}: empty trace (no header line)")
    return header, entries


def schedule(entries: Iterable[Entry], speed: float = 1.0) -> Iterator[tuple[float, Entry]]:
    """(delay before this entry in seconds, entry): original spacing / speed. speed=inf: no delays.
    Entries out of time order get a delay of 0 (they are not reordered)."""
    if not speed > 0:
        raise ValueError(
            f"speed must be > 0 (1 = real time, 10 = ten times faster, inf = no waiting), got {speed}"
        )
    prev: float | None = None
    for e in entries:
        t = entry_ts(e)
        delay = 0.0 if prev is None or speed == float("inf") else max(0.0, (t - prev) / speed)
        prev = t if prev is None else max(prev, t)
        yield delay, e


class Replayer:
    """Iterates a trace in (scaled) real time. With `live=True` each timestamp t becomes
    start + (t - t0) / speed (start = clock() when iteration begins, t0 = the first entry's time), so
    consumers see live-looking, consistently scaled times."""

    def __init__(
        self,
        entries: Iterable[Entry],
        speed: float = 1.0,
        *,
        live: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if live and speed == float("inf"):
            raise ValueError("live=True stamps entries at their scaled times: give a finite speed")
        self.entries = list(entries)
        self.speed = speed
        self.live = live
        self.sleep = sleep
        self.clock = clock

    def _stamp(self, e: Entry, t0: float | None, start: float) -> Entry:
        if not self.live or t0 is None:
            return e

        def f(t: float) -> float:
            return start + (t - t0) / self.speed

        if isinstance(e, RawSample):
            return msgspec.structs.replace(e, ts=f(e.ts))
        return msgspec.structs.replace(e, t_first=f(e.t_first), t_last=f(e.t_last))

    def __iter__(self) -> Iterator[Entry]:
        t0 = entry_ts(self.entries[0]) if self.entries else None
        start = self.clock()
        for delay, e in schedule(self.entries, self.speed):
            if delay > 0:
                self.sleep(delay)
            yield self._stamp(e, t0, start)

    async def aiter(self) -> AsyncIterator[Entry]:
        """The same, for the async service adapter (anyio.sleep instead of blocking)."""
        t0 = entry_ts(self.entries[0]) if self.entries else None
        start = self.clock()
        for delay, e in schedule(self.entries, self.speed):
            if delay > 0:
                await anyio.sleep(delay)
            yield self._stamp(e, t0, start)
