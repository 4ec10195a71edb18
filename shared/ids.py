"""Time-ordered unique ids (ULIDs) and timestamps for message envelopes."""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time

from ulid import ULID

_ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
_DIGITS = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base32, the ULID alphabet
_PAIRS = [a + b for a in _DIGITS for b in _DIGITS]  # every 10-bit value as its two digits
_RANDOM_MAX = (1 << 80) - 1
_LOW40 = (1 << 40) - 1
_last = [0, 0, ""]  # milliseconds, randomness and time digits of the last id made here
_lock = threading.Lock()  # ids are also made in worker threads (tool results)


def _digits40(x: int) -> str:
    p = _PAIRS
    return p[x >> 30] + p[(x >> 20) & 1023] + p[(x >> 10) & 1023] + p[x & 1023]


def new_id() -> str:
    """A 26-character ULID: lexicographic order is creation order (millisecond resolution), and ids made
    by this process within one millisecond increase (python-ulid's default, strict monotonic policy).

    The same string `str(ULID())` gives, at about half its cost (one is made for every message): 10
    digits of the 48-bit millisecond time (made once per millisecond), then 16 of the 80 random bits."""
    ms = time.time_ns() // 1_000_000
    with _lock:
        if ms <= _last[0]:  # the same millisecond (or the clock stepped back): the next value
            ms, rand, head = _last[0], _last[1] + 1, _last[2]
            if rand > _RANDOM_MAX:  # 2^80 ids in one millisecond: move to the next one
                ms, rand = ms + 1, int.from_bytes(os.urandom(10))
                head = _PAIRS[ms >> 40] + _digits40(ms & _LOW40)
        else:
            rand = int.from_bytes(os.urandom(10))
            head = _PAIRS[ms >> 40] + _digits40(ms & _LOW40)
        _last[0], _last[1], _last[2] = ms, rand, head
    return head + _digits40(rand >> 40) + _digits40(rand & _LOW40)


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
