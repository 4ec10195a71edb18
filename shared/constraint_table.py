"""A task's `constraint(config, shape)` over its SPACE, as a table other services can read. Pure.

The toolrunner's loader (the only place task code runs, DESIGN.md rule 4) calls `evaluate` with the
task's constraint and puts the `ConstraintTable` in the manifest; the planner wraps it in a
`ConstraintScope` (with the CONFIG and SPACE it numbers) and leaves out the configs it refuses, which the
verifier's static layer would otherwise refuse one candidate at a time (H200 run r42: one of the six
l3_pipeline candidates).

Both sides number configs the same way (shared/tools/task.py, ConstraintTable): itertools.product over
SPACE's keys for a cross product, the list order of `shared.space_list.points` for a list SPACE.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any

import msgspec

from shared.messages import Scalar
from shared.space_list import points
from shared.tools.task import ConstraintTable, TaskManifest

MAX_CONFIGS = 50_000  # l3_pipeline's SPACE is 46,080 configs: ~0.3 s for micro + full on one core
TIME_LIMIT_S = 5.0  # a slow constraint must not hold up every load of the task (each tool loads it)
_CHECK_EVERY = 256  # configs between clock reads


def _size(space: Mapping[str, Sequence[Any]], listed: list[dict[str, Any]] | None) -> int:
    return len(listed) if listed is not None else math.prod(len(v) for v in space.values())


def _configs(config: Mapping[str, Any], space: Mapping[str, Sequence[Any]],
             listed: list[dict[str, Any]] | None) -> Iterable[dict[str, Any]]:
    if listed is not None:
        return iter(listed)
    keys = list(space)
    return ({**config, **dict(zip(keys, values, strict=True))}
            for values in itertools.product(*(space[k] for k in keys)))


def evaluate(
    constraint: Callable[[dict[str, Any], dict[str, Any]], object],
    config: Mapping[str, Any],
    space: Mapping[str, Sequence[Any]],
    space_configs: Sequence[Mapping[str, Any]],
    shapes: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    cap: int = MAX_CONFIGS,
    time_limit_s: float = TIME_LIMIT_S,
    clock: Callable[[], float] = time.monotonic,
) -> ConstraintTable:
    """`constraint` on every config of SPACE (each over CONFIG) at each named shape. A config is refused
    when the result is not True on some shape; a raise or a non-bool result refuses it too (counted in
    `raised`, the first one described in `note`), never propagates."""
    listed = points(config, space_configs) if space_configs else None
    n = _size(space, listed)
    base = {"shapes": [name for name, _ in shapes], "keys": list(space), "configs": n}
    if n > cap:
        return ConstraintTable(status="over_cap", **base,  # type: ignore[arg-type]
                               note=f"SPACE has {n:,} configs, more than the {cap:,} load_task judges: "
                                    "constraint is checked on the starting CONFIG only")
    bits = bytearray((n + 7) // 8)
    refused = raised = 0
    first = ""
    start = clock()
    for i, cfg in enumerate(_configs(config, space, listed)):
        if i % _CHECK_EVERY == 0 and i and clock() - start > time_limit_s:
            return ConstraintTable(status="timed_out", **base,  # type: ignore[arg-type]
                                   note=f"constraint took over {time_limit_s:g} s for {i:,} of {n:,} configs: "
                                        "checked on the starting CONFIG only")
        for name, shape in shapes:
            try:
                ok = constraint(dict(cfg), dict(shape))
            except Exception as e:  # noqa: BLE001 - user code: a raise refuses this config only
                ok, why = None, f"raised {type(e).__name__}: {e}"
            else:
                why = "" if ok is True or ok is False else f"returned {ok!r}, not a bool"
            if ok is not True:
                bits[i >> 3] |= 1 << (i & 7)
                refused += 1
                if why:
                    raised += 1
                    first = first or f"{why} on {cfg} at shape {name}"
                break
    note = (f"constraint {first}; {raised:,} such configs counted as refused"[:400]) if raised else ""
    return ConstraintTable(status="complete", **base, refused=refused, raised=raised,  # type: ignore[arg-type]
                           refused_bits=bytes(bits), note=note)


def _vkey(v: object) -> tuple[str, object]:
    return (type(v).__name__, v)  # 1, 1.0 and True are different SPACE values here


def _ckey(cfg: Mapping[str, Any]) -> tuple[tuple[str, tuple[str, object]], ...]:
    return tuple(sorted((k, _vkey(v)) for k, v in cfg.items()))


class ConstraintScope(msgspec.Struct, kw_only=True, dict=True):
    """A ConstraintTable with the CONFIG and SPACE it numbers (one task file version): which of a
    planner's configs the task's constraint refuses.

    `refuses` judges only a config whose keys are exactly CONFIG's and whose values are a point of the
    enumerated SPACE (non-SPACE keys at CONFIG's values). Anything else is None, not judged: above all a
    config with a key the table never saw, such as the constexpr knob a transformation adds to CONFIG and
    SPACE (shared/transforms/code.py add_constexpr), since only the task's code can say what constraint()
    makes of a key it was not written for. The planner asks load_task about the transformed file for those.
    """

    path: str  # the file the table was computed for
    config: dict[str, Scalar]
    space: dict[str, list[Scalar]]
    space_configs: list[dict[str, Scalar]] = []
    table: ConstraintTable

    @cached_property
    def _positions(self) -> list[dict[tuple[str, object], int]]:
        out = []
        for k in self.table.keys:
            pos: dict[tuple[str, object], int] = {}
            for j, v in enumerate(self.space.get(k, [])):
                pos.setdefault(_vkey(v), j)
            out.append(pos)
        return out

    @cached_property
    def _listed(self) -> dict[tuple, int] | None:
        if not self.space_configs:
            return None
        out: dict[tuple, int] = {}
        for i, c in enumerate(points(self.config, self.space_configs)):
            out.setdefault(_ckey(c), i)
        return out

    @cached_property
    def seen(self) -> set[tuple]:
        """Configs this scope refused since it was made (each once): the planner's count of skips."""
        return set()

    def index(self, cfg: Mapping[str, Any]) -> int | None:
        """The config's number in the table, None when the table does not cover it."""
        if self.table.status != "complete" or set(cfg) != set(self.config):
            return None
        if self._listed is not None:
            return self._listed.get(_ckey(cfg))
        if any(_vkey(cfg[k]) != _vkey(v) for k, v in self.config.items() if k not in self.space):
            return None
        i = 0
        for k, pos in zip(self.table.keys, self._positions, strict=True):
            j = pos.get(_vkey(cfg.get(k)))
            if j is None:
                return None
            i = i * len(self.space[k]) + j
        return i if i < self.table.configs else None

    def refuses(self, cfg: Mapping[str, Any]) -> bool | None:
        """True: the constraint refuses `cfg`; False: it allows it; None: not judged (see the class)."""
        i = self.index(cfg)
        if i is None:
            return None
        out = bool(self.table.refused_bits[i >> 3] >> (i & 7) & 1)
        if out:
            self.seen.add(_ckey(cfg))
        return out

    def describe(self) -> str:
        t = self.table
        how = f" ({t.raised:,} because constraint raised or returned a non-bool)" if t.raised else ""
        return f"{t.refused:,} of {t.configs:,} SPACE configs refused{how} on shapes {', '.join(t.shapes)}"


def scope_of(manifest: TaskManifest) -> ConstraintScope | None:
    """The manifest's table with what it numbers; None when the task has none."""
    if manifest.constraint_table is None:
        return None
    return ConstraintScope(path=manifest.path, config=dict(manifest.config), space=dict(manifest.space),
                           space_configs=list(manifest.space_configs), table=manifest.constraint_table)


def refusing(scopes: Sequence[ConstraintScope], cfg: Mapping[str, Any]) -> ConstraintScope | None:
    """The first scope that judges `cfg` when it refuses it; None when it is allowed or not judged."""
    for s in scopes:
        got = s.refuses(cfg)
        if got is not None:
            return s if got else None
    return None
