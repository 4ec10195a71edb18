"""Every tool this runner can serve, in the order `kpilot tool --list` shows them: the tool registry.

A tool is a package under services/toolrunner/tools/ named after it, whose `spec.py` defines `SPEC`
(a ToolSpec); the catalog finds them there and sorts them by `SPEC.order`. A tool package's `__init__.py`
stays empty: a worker started as `python -m services.toolrunner.tools.<name>.worker` imports it first, and
inside the sandbox it must not import the runner side (spec.py, sandbox.py).

`contracts()` is what callers may know of each tool; `kpilot schemas` renders it into
shared/tools/catalog.py, the catalog services that may not import the toolrunner read (the planner's tool
table), and a test fails when the two drift.
"""

from __future__ import annotations

import importlib
import itertools
import pkgutil

from services.toolrunner import tools
from services.toolrunner.tool import ToolSpec
from shared.tools.contract import ToolContract


def load_specs() -> dict[str, ToolSpec]:
    """name -> spec, in catalog order; imports each tool's spec module (silent: no tool does work at import)."""
    found: list[ToolSpec] = []
    for pkg in pkgutil.iter_modules(tools.__path__):
        if not pkg.ispkg:
            continue
        spec: ToolSpec = importlib.import_module(f"{tools.__name__}.{pkg.name}.spec").SPEC
        assert spec.name == pkg.name, f"tools/{pkg.name}/spec.py: SPEC is named {spec.name!r}, not after its folder"
        found.append(spec)
    found.sort(key=lambda s: s.order)
    for a, b in itertools.pairwise(found):
        assert a.order != b.order, f"tools {a.name} and {b.name} both have order={a.order}; give each its own place"
    return {spec.name: spec for spec in found}


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
