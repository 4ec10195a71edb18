"""Time-ordered unique ids (ULIDs) and timestamps for message envelopes."""

from __future__ import annotations

import hashlib
import re
import time

from ulid import ULID

_ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


def new_id() -> str:
    """A 26-character ULID: lexicographic order is creation order (millisecond resolution)."""
    return str(ULID())


def now() -> float:
    """Wall-clock seconds since the epoch, the envelope's `ts`."""
    return time.time()


def derived_id(kind: str, key: str) -> str:
    """A ULID fixed by (kind, key): its time part from the first ULID in `key`, the rest from a hash.

    A republished message carries the same id, so JetStream drops it (Nats-Msg-Id de-duplication).
    """
    found = _ULID.search(key)  # planner ids embed one: "job-<ULID>-v3"
    try:
        ms = ULID.from_str(found.group(0)).milliseconds if found else 0
    except ValueError:
        ms = 0
    digest = hashlib.sha256(f"{kind}:{key}".encode()).digest()
    return str(ULID.from_bytes(ms.to_bytes(6, "big") + digest[:10]))
