"""Time-ordered unique ids (ULIDs) and timestamps for message envelopes."""

from __future__ import annotations

import time

from ulid import ULID


def new_id() -> str:
    """A 26-character ULID: lexicographic order is creation order (millisecond resolution)."""
    return str(ULID())


def now() -> float:
    """Wall-clock seconds since the epoch, the envelope's `ts`."""
    return time.time()
