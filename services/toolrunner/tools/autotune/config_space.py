"""Expand a task's tunable SPACE over its CONFIG into concrete configs. Pure.

SPACE maps CONFIG keys to allowed values (examples/README.md), or lists configs autotune-style (each
entry merged over CONFIG, shared/space_list.py); the optional `constraint(config, shape)` removes
combinations that cannot work (e.g. BLOCK_K > K). Order is itertools.product's over SPACE's key order,
or the list's, so a capped expansion is deterministic.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from shared.space_list import is_list, points

Config = dict[str, Any]


def expand(
    config: Mapping[str, Any],
    space: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]],
    constraint: Callable[[Config, dict[str, Any]], bool] | None = None,
    shape: dict[str, Any] | None = None,
) -> list[Config]:
    every: Iterable[Config]
    if is_list(space):
        every = points(config, space)  # type: ignore[arg-type]
    else:
        keys = list(space)
        every = ({**config, **dict(zip(keys, values))}  # lazily: a product can hold 100k+ configs
                 for values in itertools.product(*(space[k] for k in keys)))  # type: ignore[call-overload]
    out = []
    for cfg in every:
        if constraint is None or constraint(cfg, dict(shape or {})):
            out.append(cfg)
    return out


def merge(config: Mapping[str, Any], overrides: Sequence[Mapping[str, Any]]) -> list[Config]:
    """Each override merged over CONFIG; an override key CONFIG lacks is an error naming the known keys."""
    out = []
    for o in overrides:
        unknown = sorted(set(o) - set(config))
        if unknown and config:
            raise KeyError(f"config keys {unknown} are not in CONFIG (it has {sorted(config)})")
        out.append({**config, **o})
    return out
