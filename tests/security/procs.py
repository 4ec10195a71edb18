"""Find a sandbox's processes from the host and wait for them to end (pidfds: the event, not a sleep)."""

from __future__ import annotations

import os
import select
import time
from pathlib import Path


def host_pids(marker: str, uid: int | None = None) -> list[int]:
    """Host pids of live processes with `marker` as one of their argv words (and real uid `uid`)."""
    want = marker.encode()
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            owner = (d / "status").read_text().split("Uid:")[1].split()[0]
        except OSError:
            continue
        if uid is not None and owner != str(uid):
            continue
        if want in argv and state not in ("Z", "X"):
            out.append(int(d.name))
    return out


def wait_for(marker: str, count: int, timeout_s: float, uid: int | None = None) -> list[int]:
    """Wait until `count` processes carry `marker` (they are being started); their host pids."""
    deadline = time.monotonic() + timeout_s
    while True:
        pids = host_pids(marker, uid)
        if len(pids) >= count or time.monotonic() > deadline:
            return pids
        time.sleep(0.02)


def still_alive_after(pidfds: list[int], timeout_s: float) -> int:
    """Block until every process behind `pidfds` has exited, or `timeout_s`; how many still live."""
    poller = select.poll()
    for fd in pidfds:
        poller.register(fd, select.POLLIN)
    alive = set(pidfds)
    deadline = time.monotonic() + timeout_s
    while alive and (left := deadline - time.monotonic()) > 0:
        for fd, _ in poller.poll(left * 1000):
            alive.discard(fd)
            poller.unregister(fd)
    for fd in pidfds:
        os.close(fd)
    return len(alive)
