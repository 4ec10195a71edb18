"""Which message types skip the depth scan of their bytes, and that their typed decoders then refuse a
document nested far deeper than the scan's limit without recursing (pure logic, no NATS)."""

from __future__ import annotations

import msgspec
import msgspec.inspect as mi
import pytest

from shared import limits
from shared.messages import MESSAGE_TYPES, Heartbeat, StateVector, ToolRequest, decode

DEPTH = 200_000  # far past Python's recursion limit: a recursing decoder would raise RecursionError


class Tree(msgspec.Struct, forbid_unknown_fields=True):
    children: list[Tree] = []


class Lenient(msgspec.Struct):  # skips unknown fields' values
    a: int = 0


class Loose(msgspec.Struct, forbid_unknown_fields=True):
    extra: dict[str, object] = {}


def test_bounded_depth_counts_the_levels_a_type_allows() -> None:
    assert limits.bounded_depth(Heartbeat) == 1
    assert limits.bounded_depth(StateVector) == 4  # vector -> triples list -> KernelShare -> its config dict
    assert limits.bounded_depth(list[dict[str, int]]) == 2


@pytest.mark.parametrize("t", [Tree, Lenient, Loose, ToolRequest])
def test_types_nothing_bounds_keep_the_depth_scan(t: type) -> None:
    assert limits.bounded_depth(t) is None


def test_an_unbounded_type_still_gets_the_scan_and_its_message() -> None:
    deep = b'{"kind":"tool_request","source":"x","tool":"t","args":{"a":' + b"[" * DEPTH
    with pytest.raises(limits.LimitExceeded, match="nested deeper than 64"):
        decode(deep, ToolRequest)


def _bounded() -> list[tuple[type, str]]:
    found = []
    for t in MESSAGE_TYPES:
        if limits.bounded_depth(t) is not None:
            found += [(t, f.encode_name) for f in mi.type_info(t).fields]
    return found


@pytest.mark.parametrize(("t", "field"), _bounded(), ids=lambda x: getattr(x, "__name__", x))
def test_a_bounded_type_refuses_deep_nesting_in_every_field_without_recursing(t: type, field: str) -> None:
    tag = mi.type_info(t).tag
    for opener in (b"[", b'{"x":'):
        deep = b'{"kind":"' + tag.encode() + b'","' + field.encode() + b'":' + opener * DEPTH
        with pytest.raises(msgspec.ValidationError):  # a DecodeError subclass; never RecursionError
            decode(deep, t)
