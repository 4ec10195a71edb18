"""`kpilot schemas`: generate schemas/ from the Structs, or check it for drift."""

from __future__ import annotations

from shared.schemagen import all_schemas, drift, write_all


def tool_records() -> dict[str, tuple[type, type]]:
    """Each tool's input and output record, from the toolrunner's catalog (the CLI may read it; services
    learn the tools at run time from `toolrunner.list`)."""
    from services.toolrunner.catalog import load_specs
    return {name: (spec.input, spec.output) for name, spec in load_specs().items()}


def run_schemas(*, check: bool) -> int:
    schemas = all_schemas(tool_records())
    if check:
        problems = drift(schemas)
        for p in problems:
            print(f"schemas/{p} differs from the code; run `make schemas` and commit the result")
        return 1 if problems else 0
    written = write_all(schemas)
    print(f"kpilot schemas: {len(schemas)} schemas, {len(written)} written")
    return 0
