"""Size and nesting-depth limits of a JSON message, checked on its raw bytes before any decoder runs.

msgspec and jsonschema both recurse per nesting level: a document nested 3,000 levels deep raises
`RecursionError` in either (issue 18 stopped every consumer that way). The depth check here never
recurses: it drops string literals, keeps only the bracket bytes and strips innermost `[]` / `{}` pairs
one level per pass (each pass is one C-level regex over the bytes), so its cost is bounded by
`max_depth` passes whatever the input.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import msgspec.inspect as mi

# The deepest message the system makes is a ToolResult of a compile (envelope -> result -> artifacts ->
# record -> field: depth 6); 64 leaves room for tool arguments and stays far below the ~1,000 Python
# frames at which the decoders fail.
MAX_DEPTH = 64
# Consumed messages (candidates, verdicts, telemetry) are a few KB; 1 MiB is 100x the largest seen.
# Request replies may carry compiler text and are bounded by the server's max_payload (8 MB) instead.
MAX_BYTES = 1 << 20

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_ONE_KIND = bytes.maketrans(b"{}", b"[]")  # depth is what the decoder recurses on, whatever the kind
_INNERMOST = re.compile(rb"\[\]")


class LimitExceeded(msgspec.DecodeError):
    """The message breaks a size or depth limit; a DecodeError, so every decode site already treats it
    as malformed input."""


def depth_exceeds(data: bytes, max_depth: int = MAX_DEPTH) -> bool:
    """True when the JSON in `data` nests deeper than `max_depth` arrays/objects (no recursion)."""
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return False
    brackets = _STRING.sub(b"", data).translate(_ONE_KIND, _NOT_BRACKETS)
    for passes in range(max_depth + 1):
        stripped = _INNERMOST.sub(b"", brackets)
        if stripped == brackets:
            # Unmatched openers left (truncated JSON) still nest the decoder before it fails: count them.
            return passes + brackets.count(b"[") > max_depth
        brackets = stripped
    return True


_SCALARS = (mi.BoolType, mi.ByteArrayType, mi.BytesType, mi.DateTimeType, mi.DateType, mi.DecimalType,
            mi.EnumType, mi.FloatType, mi.IntType, mi.LiteralType, mi.NoneType, mi.StrType, mi.TimeDeltaType,
            mi.TimeType, mi.UUIDType)


def bounded_depth(type_: Any) -> int | None:
    """How deep a JSON document can nest before msgspec's typed decoder for `type_` refuses it, or None
    when nothing bounds it (an `Any`, a raw value, a recursive type, a Struct that skips unknown fields).

    The typed decoder checks each value against its declared type as it reads: where `type_` bounds the
    nesting, a deeper document fails at the first level the type does not allow (a list where a str is
    declared, an unknown field), after reading at most that many levels. Such a type needs no depth scan
    of its bytes (`check(..., max_depth=None)`); the scan is for the types this returns None for."""
    def depth(t: mi.Type, path: frozenset[type]) -> int | None:
        if isinstance(t, _SCALARS):
            return 0
        if isinstance(t, mi.StructType):
            if not t.forbid_unknown_fields or t.cls in path:  # unknown values are skipped; a cycle
                return None
            inner = [depth(f.type, path | {t.cls}) for f in t.fields]
            return None if None in inner else 1 + max(inner, default=0)  # type: ignore[type-var]
        if isinstance(t, mi.UnionType):
            inner = [depth(u, path) for u in t.types]
            return None if None in inner else max(inner)  # type: ignore[type-var]
        if isinstance(t, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
            d = depth(t.item_type, path)
            return None if d is None else 1 + d
        if isinstance(t, mi.TupleType):
            inner = [depth(u, path) for u in t.item_types]
            return None if None in inner else 1 + max(inner, default=0)  # type: ignore[type-var]
        if isinstance(t, mi.DictType):
            d = depth(t.value_type, path)
            return None if d is None else 1 + d
        return None  # Any, Raw, custom and anything not listed: not bounded here

    return depth(mi.type_info(type_), frozenset())


def check(data: bytes, *, max_bytes: int | None = None, max_depth: int | None = MAX_DEPTH) -> None:
    """Raise LimitExceeded, with the limit and how to stay inside it, when `data` is too big or deep
    (`max_depth=None`: the size only, for a type whose decoder bounds the depth, see `bounded_depth`)."""
    if max_bytes is not None and len(data) > max_bytes:
        raise LimitExceeded(f"message of {len(data):,} bytes exceeds this consumer's limit of {max_bytes:,} "
                            f"bytes; store large payloads in the `artifacts` object store and send a reference")
    if max_depth is not None and depth_exceeds(data, max_depth):
        raise LimitExceeded(f"JSON nested deeper than {max_depth} levels; no kernelpilot message nests "
                            f"that deep (send flat records)")


# A task captured live travels in one CapturedTaskSource message. The largest hand-written task is 12 KB
# (benchmarks/tasks/l3_pipeline.py); a captured one also carries the call's saved small/index tensors as
# base64, e.g. one int64 index of 32,768 elements is 350 KB. 512 KiB keeps the message, JSON-escaped (each
# newline or quote becomes two bytes), under CAPTURED_TASK_MESSAGE_BYTES and the server's 8 MB max_payload.
MAX_CAPTURED_TASK_BYTES = 512 << 10
CAPTURED_TASK_MESSAGE_BYTES = 2 << 20
