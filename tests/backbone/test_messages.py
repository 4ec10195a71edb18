"""Every message type round-trips through JSON and through its JSON Schema (pure, no NATS)."""

from __future__ import annotations

import json

import msgspec
import pytest

from shared import messages as m
from shared.schemagen import all_schemas, drift, kind_of, validate_message


def _example(type_: type) -> msgspec.Struct:
    """Fill every required field with a value of the right type (Literal -> its first choice)."""
    info = msgspec.inspect.type_info(type_)
    fields = {f.name: _value(f.type) for f in info.fields if f.required}  # type: ignore[attr-defined]
    return type_(**fields)


def _value(t: msgspec.inspect.Type) -> object:
    match t:
        case msgspec.inspect.StrType():
            return "x"
        case msgspec.inspect.BoolType():
            return True
        case msgspec.inspect.StructType():
            return _example(t.cls)
        case msgspec.inspect.IntType():
            return 1
        case msgspec.inspect.FloatType():
            return 1.5
        case msgspec.inspect.LiteralType():
            return t.values[0]
        case msgspec.inspect.ListType():
            return []
        case msgspec.inspect.DictType():
            return {}
        case msgspec.inspect.UnionType():
            return _value(t.types[0])
    raise AssertionError(f"no example value for {t}")


@pytest.mark.parametrize("type_", m.MESSAGE_TYPES, ids=kind_of)
def test_round_trip(type_: type[m.Message]) -> None:
    msg = _example(type_)
    data = m.encode(msg)
    assert m.decode(data, type_) == msg
    assert m.decode(data) == msg  # the union picks the type from `kind`
    doc = json.loads(data)
    assert doc["kind"] == kind_of(type_)
    assert validate_message(doc) == []


def test_envelope_ids_are_time_ordered_and_unique() -> None:
    ids = [m.Heartbeat(source="t").id for _ in range(1000)]
    assert len(set(ids)) == 1000
    assert ids == sorted(ids)


def test_new_id_is_the_ulid_of_its_time_and_counts_up_within_a_millisecond() -> None:
    import itertools
    import time

    from ulid import ULID

    from shared import ids as idmod
    before = time.time()
    made = [idmod.new_id() for _ in range(5000)]
    after = time.time()
    assert made == sorted(made) and len(set(made)) == len(made)
    for i in made[::500]:
        u = ULID.from_str(i)  # python-ulid parses it back to the same string
        assert str(u) == i and before - 0.002 <= u.timestamp <= after + 0.002
    # Two ids of one millisecond differ by one in their random part (the strict monotonic policy).
    pairs = [(a, b) for a, b in itertools.pairwise(made) if a[:10] == b[:10]]
    assert pairs and all(int(ULID.from_str(b)) - int(ULID.from_str(a)) == 1 for a, b in pairs[:100])
    idmod._last[1] = (1 << 80) - 1  # the randomness of this millisecond used up: the next one, still ordered
    last = made[-1]
    nxt = idmod.new_id()
    assert nxt > last and str(ULID.from_str(nxt)) == nxt


def test_caused_links_job_and_causation() -> None:
    ping = m.Heartbeat(source="a", job_id="j1")
    ack = m.HeartbeatAck(source="b", service="b", instance="i", version="1", **ping.caused())
    assert (ack.job_id, ack.causation_id) == ("j1", ping.id)


def test_schema_rejects_bad_input_with_readable_violations() -> None:
    bad = {"kind": "verdict", "source": "x", "candidate_id": 3, "kernel": "k", "layer": "sideways",
           "status": "pass"}
    problems = validate_message(bad)
    assert any("candidate_id" in p for p in problems)
    assert any("layer" in p for p in problems)
    assert validate_message({"kind": "nope"})[0].startswith("unknown kind 'nope'")
    assert validate_message([1, 2]) == ["a message is a JSON object with a `kind` field naming its type"]


def test_decoder_refuses_unknown_fields() -> None:
    data = json.dumps({"kind": "heartbeat", "source": "x", "surprise": 1}).encode()
    with pytest.raises(msgspec.ValidationError, match="surprise"):
        m.decode(data)


def test_checked_in_schemas_match_the_code() -> None:
    from services.kpilot.schemas import tool_records
    problems = drift(all_schemas(tool_records()))
    assert problems == [], f"schemas/ drifted; run `make schemas`: {problems}"
