"""JSON Schemas of every message and tool record, generated from the msgspec Structs.

`kpilot schemas` (or `make schemas`) writes them under `schemas/`; a test fails when the checked-in files
drift from the code. Anything that enters from outside (CLI, workload SDK, another language's client) is
validated against these with jsonschema (`validate`).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import msgspec

from shared.messages import MESSAGE_TYPES, Message

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas"


def message_schema(type_: type[Message]) -> dict[str, Any]:
    return msgspec.json.schema(type_)


def record_schema(type_: type) -> dict[str, Any]:
    return msgspec.json.schema(type_)


def kind_of(type_: type[Message]) -> str:
    return msgspec.inspect.type_info(type_).tag  # type: ignore[attr-defined]


def all_schemas(tool_records: dict[str, tuple[type, type]] | None = None) -> dict[str, dict[str, Any]]:
    """Relative path under schemas/ -> schema, for every message and (given) tool input/output."""
    out = {f"messages/{kind_of(t)}.json": message_schema(t) for t in MESSAGE_TYPES}
    for name, (inp, outp) in sorted((tool_records or {}).items()):
        out[f"tools/{name}.input.json"] = record_schema(inp)
        out[f"tools/{name}.output.json"] = record_schema(outp)
    return out


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write_all(schemas: dict[str, dict[str, Any]], root: Path = SCHEMA_DIR) -> list[str]:
    written = []
    for rel, schema in schemas.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = render(schema)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            written.append(rel)
    return written


def drift(schemas: dict[str, dict[str, Any]], root: Path = SCHEMA_DIR) -> list[str]:
    """Files that differ from, are missing from, or are extra to what the code generates."""
    problems = [rel for rel, s in schemas.items()
                if not (root / rel).exists() or (root / rel).read_text() != render(s)]
    on_disk = {str(p.relative_to(root)) for p in root.rglob("*.json")}
    problems += sorted(on_disk - set(schemas))
    return problems


@cache
def _validator(kind: str) -> jsonschema.protocols.Validator:
    by_kind = {kind_of(t): t for t in MESSAGE_TYPES}
    schema = message_schema(by_kind[kind])
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def validate_message(doc: Any) -> list[str]:
    """Every violation of `doc` against the schema its `kind` names, as readable lines ('' = valid)."""
    if not isinstance(doc, dict) or "kind" not in doc:
        return ["a message is a JSON object with a `kind` field naming its type"]
    kinds = {kind_of(t) for t in MESSAGE_TYPES}
    if doc["kind"] not in kinds:
        return [f"unknown kind {doc['kind']!r}; known: {', '.join(sorted(kinds))}"]
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
            for e in _validator(doc["kind"]).iter_errors(doc)]
