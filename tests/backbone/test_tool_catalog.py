"""One tool catalog: shared/tools/catalog.py is the toolrunner's registry rendered, and what the
planner's model sees is taken from it."""

from __future__ import annotations

import dataclasses

import msgspec
import pytest

from services.kpilot import schemas
from services.planner.policies.base import inline_schema
from services.planner.policies.llm import tool_specs
from services.toolrunner import catalog as registry
from shared.tools.catalog import CONTRACTS
from shared.tools.contract import ToolContract, render_catalog


def test_the_checked_in_catalog_is_the_registry_rendered() -> None:
    assert not schemas.catalog_drifted(), "shared/tools/catalog.py drifted from the registry; run `make schemas`"
    specs = registry.load_specs()
    assert [c.name for c in CONTRACTS] == list(specs)
    for c in CONTRACTS:
        s = specs[c.name]
        assert (c.version, c.description, c.input, c.output, c.needs_gpu, c.cacheable, c.for_plans) == (
            s.version, s.description, s.input, s.output, s.needs_gpu, s.cacheable, s.for_plans)


def test_a_changed_spec_is_drift_that_kpilot_schemas_check_reports(monkeypatch, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    specs = registry.load_specs()
    specs["compile"] = dataclasses.replace(specs["compile"], description="compiles")
    monkeypatch.setattr(registry, "load_specs", lambda: specs)
    monkeypatch.setattr(schemas, "tool_records", lambda: {n: (s.input, s.output) for n, s in specs.items()})
    assert schemas.catalog_drifted()
    assert schemas.run_schemas(check=True) == 1
    assert "shared/tools/catalog.py differs from the code; run `make schemas`" in capsys.readouterr().out


def test_the_model_sees_the_plan_tools_of_the_catalog_with_their_registry_descriptions() -> None:
    specs = registry.load_specs()
    table = {t["function"]["name"]: t["function"] for t in tool_specs()}
    # The tools the recorded exchange (tests/fixtures/llm/) was made with: static diagnosis only.
    assert list(table) == ["compile", "ptxas_info", "sass", "launch_config"]
    assert list(table) == [n for n, s in specs.items() if s.for_plans]
    for name, fn in table.items():
        assert not specs[name].needs_gpu
        assert fn["description"] == specs[name].description
        assert fn["parameters"] == inline_schema(specs[name].input)


def test_a_plan_tool_that_needs_a_gpu_is_refused(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    specs = registry.load_specs()
    specs["bench"] = dataclasses.replace(specs["bench"], for_plans=True)
    monkeypatch.setattr(registry, "load_specs", lambda: specs)
    with pytest.raises(ValueError, match="bench: a tool plans may ask for cannot need a GPU"):
        registry.contracts()


class Outside(msgspec.Struct):
    x: int = 0


def test_a_tool_record_outside_shared_cannot_enter_the_catalog() -> None:
    c = ToolContract(name="t", version="1", description="d", input=Outside, output=Outside, needs_gpu=False,
                     cacheable=False, for_plans=False)
    with pytest.raises(ValueError, match="must live under shared/.*move it to shared/tools/"):
        render_catalog([c])
