"""How many things a service runs at once: a count from the environment, or a default from the cores this
process may use. One parser, so every such setting refuses a bad value the same way, naming the fix."""

from __future__ import annotations

import os
from collections.abc import Mapping


def cores() -> int:
    """The CPU cores this process may run on (its affinity mask, not the host's total)."""
    return max(len(os.sched_getaffinity(0)), 1)


def count_from_env(env: Mapping[str, str], name: str, default: int, what: str) -> int:
    """`env[name]` as a whole number of at least 1, else `default`; `what` names what is counted."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{name}={raw!r}: give a whole number of {what}, 1 or more (or unset it for {default})")
    return int(raw)
