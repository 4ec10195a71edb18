"""SPACE given as a list of configs (autotune-style) besides the dict cross product. Pure.

    SPACE = {"BLOCK": [128, 256], "num_warps": [4, 8]}          # cross product: 4 configs
    SPACE = [{"BLOCK": 128, "num_warps": 4}, {"BLOCK": 256, "num_warps": 8}]   # exactly these 2

Each listed entry is merged over CONFIG (keys it leaves out keep CONFIG's value), as an
`@triton.autotune` config list is over the launch's own arguments. CONFIG itself must be one of the
listed configs. Everything that reads SPACE works from two views of a list: the configs it allows
(`points`) and each key's values in first-seen order (`domains`, what a knob may take at all).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

LIST_FORM = 'SPACE = [{"BLOCK": 128, "num_warps": 4}, {"BLOCK": 256, "num_warps": 8}]'


def is_list(space: object) -> bool:
    return isinstance(space, (list, tuple))


def domains(entries: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Each key's values over the entries, first seen first (a value repeats once)."""
    out: dict[str, list[Any]] = {}
    for e in entries:
        for k, v in e.items():
            vs = out.setdefault(k, [])
            if v not in vs:
                vs.append(v)
    return out


def points(config: Mapping[str, Any], entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The full configs a list SPACE allows: each entry over CONFIG, duplicates once, in list order."""
    out: list[dict[str, Any]] = []
    for e in entries:
        c = {**config, **e}
        if c not in out:
            out.append(c)
    return out


def _scalar(v: object) -> bool:
    return isinstance(v, (bool, int, float, str))


def problems(config: Mapping[str, Any], space: Sequence[object]) -> list[str]:
    """What is wrong with a list SPACE over `config`, each with the fix; empty = fine."""
    if not space:
        return [f"an empty list allows no config; list at least CONFIG's own values, e.g. {LIST_FORM}"]
    out = []
    for i, e in enumerate(space):
        if not isinstance(e, dict) or not e or not all(isinstance(k, str) and _scalar(v) for k, v in e.items()):
            out.append(f"entry {i} is {e!r}, not a non-empty dict of CONFIG key -> int/float/str/bool "
                       f"(e.g. {{'BLOCK': 256, 'num_warps': 8}})")
        elif unknown := sorted(set(e) - set(config)):
            out.append(f"entry {i} has keys {unknown} that are not in CONFIG ({sorted(config)}); add them to "
                       "CONFIG or drop them from the entry")
    if out:
        return out
    if dict(config) not in points(config, space):  # type: ignore[arg-type]
        keys = list(domains(space))  # type: ignore[arg-type]
        own = {k: config[k] for k in keys if k in config}
        out.append(f"CONFIG is none of the listed configs; add an entry with CONFIG's values, {own!r}")
    return out


def with_knob(entries: Sequence[Mapping[str, Any]], name: str, domain: Sequence[Any]) -> list[dict[str, Any]]:
    """A list SPACE with a new knob (a transformation's constexpr): every entry with every value of it,
    so the knob is tuned with each listed config (the dict form's `SPACE[name] = domain`)."""
    return [{**e, name: v} for e in entries for v in domain]
