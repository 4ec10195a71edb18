"""`kpilot schemas`: generate schemas/ from the Structs and shared/tools/catalog.py from the tool
registry, or check both for drift."""

from __future__ import annotations

from pathlib import Path

from shared.schemagen import all_schemas, drift, write_all

CATALOG = Path(__file__).resolve().parents[2] / "shared" / "tools" / "catalog.py"


def tool_records() -> dict[str, tuple[type, type]]:
    """Each tool's input and output record, from the toolrunner's catalog (the CLI may read it; services
    learn the tools at run time from `toolrunner.list`)."""
    from services.toolrunner.catalog import load_specs
    return {name: (spec.input, spec.output) for name, spec in load_specs().items()}


def run_schemas(*, check: bool) -> int:
    schemas = all_schemas(tool_records())
    if check:
        problems = [f"schemas/{p}" for p in drift(schemas)]
        problems += ["shared/tools/catalog.py"] if catalog_drifted() else []
        for p in problems:
            print(f"{p} differs from the code; run `make schemas` and commit the result")
        return 1 if problems else 0
    written = write_all(schemas)
    if catalog_drifted():
        CATALOG.write_text(catalog_source())
        written.append("shared/tools/catalog.py")
    print(f"kpilot schemas: {len(schemas)} schemas and the tool catalog, {len(written)} written")
    return 0


def catalog_source() -> str:
    """shared/tools/catalog.py as the toolrunner's registry renders it today."""
    from services.toolrunner.catalog import contracts
    from shared.tools.contract import render_catalog
    return render_catalog(contracts())


def catalog_drifted() -> bool:
    return not CATALOG.exists() or CATALOG.read_text() != catalog_source()
