"""Every tool this runner can serve, in the order `kpilot tool --list` shows them."""

from __future__ import annotations

import importlib

from services.toolrunner.tool import ToolSpec

_MODULES = ("compile", "ptxas_info", "sass", "launch_config", "run_correctness:correctness", "bench",
            "bench_ab", "ncu_profile", "sanitize", "mem_access_profile:mem_access", "autotune",
            "honesty_probe:honesty", "load_task:task_info", "launch_grid")


def load_specs() -> dict[str, ToolSpec]:
    """name -> spec; imports the tool modules (silent: no tool does work at import)."""
    specs: dict[str, ToolSpec] = {}
    for entry in _MODULES:
        name, _, module = entry.partition(":")
        spec: ToolSpec = importlib.import_module(f"services.toolrunner.{module or name}").SPEC
        assert spec.name == name, f"{module or name}.SPEC is named {spec.name!r}, catalog says {name!r}"
        specs[name] = spec
    return specs
