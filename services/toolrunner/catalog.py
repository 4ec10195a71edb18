"""Every tool this runner can serve, in the order `kpilot tool --list` shows them: the tool registry.

`contracts()` is what callers may know of each tool; `kpilot schemas` renders it into
shared/tools/catalog.py, the catalog services that may not import the toolrunner read (the planner's tool
table), and a test fails when the two drift.
"""

from __future__ import annotations

import importlib

from services.toolrunner.tool import ToolSpec
from shared.tools.contract import ToolContract

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


def contracts() -> tuple[ToolContract, ...]:
    """Each spec's contract (no run or check: those stay in the runner), in the registry's order."""
    out = []
    for spec in load_specs().values():
        if spec.for_plans and spec.needs_gpu:
            raise ValueError(f"{spec.name}: a tool plans may ask for cannot need a GPU (the verifier measures); "
                             f"drop for_plans or needs_gpu in its SPEC")
        out.append(ToolContract(name=spec.name, version=spec.version, description=spec.description,
                                input=spec.input, output=spec.output, needs_gpu=spec.needs_gpu,
                                cacheable=spec.cacheable, for_plans=spec.for_plans))
    return tuple(out)
