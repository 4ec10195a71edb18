"""The toolrunner's layout is its design: one package per tool under services/toolrunner/tools/, found by the
catalog, and worker code that imports nothing of the runner side (it runs inside the sandbox)."""

from __future__ import annotations

import dataclasses
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from services.toolrunner import catalog

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "services" / "toolrunner" / "tools"


def test_every_tool_folder_is_one_catalog_entry_named_after_it_in_order_of_its_spec() -> None:
    specs = catalog.load_specs()
    assert list(specs) == [s.name for s in sorted(specs.values(), key=lambda s: s.order)]
    assert sorted(specs) == sorted(d.name for d in TOOLS.iterdir() if (d / "spec.py").is_file())
    assert len({s.order for s in specs.values()}) == len(specs)


def test_a_spec_named_apart_from_its_folder_or_sharing_a_place_is_refused(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    bench = importlib.import_module("services.toolrunner.tools.bench.spec")
    monkeypatch.setattr(bench, "SPEC", dataclasses.replace(bench.SPEC, name="bench2"))
    with pytest.raises(AssertionError, match="tools/bench/spec.py: SPEC is named 'bench2'"):
        catalog.load_specs()
    order = importlib.import_module("services.toolrunner.tools.compile.spec").SPEC.order
    monkeypatch.setattr(bench, "SPEC", dataclasses.replace(bench.SPEC, name="bench", order=order))
    with pytest.raises(AssertionError, match=f"both have order={order}"):
        catalog.load_specs()


def test_worker_code_imports_no_runner_side_module() -> None:
    """`python -m services.toolrunner.tools.<name>.worker` imports the tool package first: an import of
    spec.py there (or in a worker) would load the sandbox, registry and stores inside the sandbox."""
    workers = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts) for p in
                     [*TOOLS.glob("*/*worker.py"), *(TOOLS.parent / "worker_lib").glob("*.py")])
    assert {"services.toolrunner.tools.compile.worker", "services.toolrunner.tools.compile.versions_worker"} <= set(workers)
    code = ("import importlib, sys\n"
            f"for m in {workers!r}: importlib.import_module(m)\n"
            "runner = ('sandbox', 'confinement', 'registry', 'catalog', 'service', 'tasks', 'artifacts',"
            " 'reference_cache', 'nvtools')\n"
            "print(sorted(n for n in sys.modules if n.startswith('services.toolrunner.') and"
            " (n.endswith('.spec') or n.split('.')[2] in runner)))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         timeout=120)
    assert out.stdout.strip() == "[]", out.stdout
