"""Run one tool request: validate, check, execute, validate the output, cache; always a ToolResult.

Pure with respect to NATS: the adapter (service.py) and the in-process client (shared/toolclient.py's
`InProcessToolClient` over `local_executor()`: `kpilot verify`, the benchmarks, the tests) both call
`ToolExecutor.execute`, so every path gets the same checks.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from functools import cached_property
from typing import Any

import jsonschema
import msgspec

from services.toolrunner.catalog import load_specs
from services.toolrunner.nvtools import gpu_count
from services.toolrunner.task_paths import MAX_PATH_CHARS, TaskRoots, check_request
from services.toolrunner.tool import ToolFailure, ToolSpec
from shared.messages import ToolError, ToolRequest, ToolResult

# Cached results kept per runner; a compile output is ~2 KB of record (artifacts live in the store).
_CACHE_ENTRIES = 4096


class Schemas:
    def __init__(self, spec: ToolSpec) -> None:
        self.spec = spec

    @cached_property
    def input(self) -> dict[str, Any]:
        return msgspec.json.schema(self.spec.input)

    @cached_property
    def output(self) -> dict[str, Any]:
        return msgspec.json.schema(self.spec.output)

    @cached_property
    def input_validator(self) -> jsonschema.protocols.Validator:
        return jsonschema.validators.validator_for(self.input)(self.input)

    @cached_property
    def output_validator(self) -> jsonschema.protocols.Validator:
        return jsonschema.validators.validator_for(self.output)(self.output)


def violations(validator: jsonschema.protocols.Validator, doc: Any) -> list[str]:
    return sorted(f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
                  for e in validator.iter_errors(doc))


def cache_key(spec: ToolSpec, args: dict[str, Any]) -> str:
    """sha256 over the tool, its version and its arguments, with the content of every file the
    arguments name: editing a task file or a cubin changes the key (a path alone would serve stale)."""
    h = hashlib.sha256(f"{spec.name}\0{spec.version}\0".encode())
    h.update(json.dumps(args, sort_keys=True, default=str).encode())
    for value in _strings(args):
        try:
            if len(value) < MAX_PATH_CHARS and os.path.isfile(value):
                with open(value, "rb") as fh:  # streamed: a large file costs time, never memory
                    h.update(hashlib.file_digest(fh, "sha256").digest())
        except (OSError, ValueError):
            h.update(b"\0unreadable")
    return h.hexdigest()


def _strings(x: Any) -> list[str]:
    if isinstance(x, str):
        return [x]
    if isinstance(x, dict):
        return [s for v in x.values() for s in _strings(v)]
    if isinstance(x, list):
        return [s for v in x for s in _strings(v)]
    return []


class ToolExecutor:
    def __init__(self, specs: dict[str, ToolSpec], *, gpus: int, runner: str,
                 roots: TaskRoots | None = None) -> None:
        """`roots`: where request paths may point (task_paths.py); None checks files but not roots (for
        in-process callers naming their own files)."""
        self.specs = specs
        self.roots = roots
        self.schemas = {name: Schemas(spec) for name, spec in specs.items()}
        self.gpus = gpus
        self.runner = runner
        self._cache: OrderedDict[str, dict[str, Any]] = OrderedDict()
        # Both callers run execute() in worker threads at once (asyncio.to_thread): the LRU's reorder and
        # eviction must not interleave.
        self._lock = threading.Lock()

    def available(self) -> list[str]:
        """Tools this runner advertises: GPU tools only where a GPU is present."""
        return [n for n, s in self.specs.items() if self.gpus > 0 or not s.needs_gpu]

    def execute(self, req: ToolRequest) -> ToolResult:
        start = time.perf_counter()

        def result(**kw: Any) -> ToolResult:
            spec = self.specs.get(req.tool)
            return ToolResult(source="toolrunner", tool=req.tool, tool_version=spec.version if spec else "",
                              duration_s=time.perf_counter() - start, runner=self.runner, **req.caused(), **kw)

        def fail(code: str, message: str, found: list[str] | None = None) -> ToolResult:
            return result(ok=False, error=ToolError(code=code, message=message,  # type: ignore[arg-type]
                                                    violations=found or []))

        spec = self.specs.get(req.tool)
        if spec is None:
            return fail("unknown_tool", f"no tool named {req.tool!r}; tools: {', '.join(self.specs)}")
        if spec.needs_gpu and self.gpus == 0:
            return fail("unavailable", f"unavailable: no GPU on runner {self.runner}")
        schemas = self.schemas[req.tool]
        found = violations(schemas.input_validator, req.args)
        if found:
            return fail("invalid_request", f"{req.tool}: {len(found)} problem(s) in the arguments; see "
                        f"`kpilot tool --list` for the input schema", found)
        if bad := check_request(req.args, self.roots):
            return fail("refused", f"{req.tool}: {bad[0]}", bad)
        key = cache_key(spec, req.args) if spec.cacheable else None
        if key is not None and (hit := self._cached(key)) is not None:
            return result(ok=True, result=hit, cached=True)
        try:
            args = msgspec.convert(req.args, spec.input)
            if spec.check is not None:
                spec.check(args)
            output = spec.run(args)
        except ToolFailure as e:
            return fail(e.code, e.message, e.violations)
        except msgspec.ValidationError as e:
            return fail("invalid_request", f"{req.tool}: {e}", [str(e)])
        except (ValueError, OSError) as e:  # the user's mistake: the message says the fix
            return fail("refused", f"{req.tool}: {e}")
        except Exception as e:  # noqa: BLE001 - our bug: still an answer, and the runner lives on
            return fail("internal", f"{req.tool} failed inside the runner ({type(e).__name__}: {e}); this is a "
                        "kernelpilot bug: report it with the request")
        doc = msgspec.to_builtins(output)
        bad = violations(schemas.output_validator, doc)
        if bad:  # our bug, not the caller's: never return a record that breaks its own schema
            return fail("internal", f"{req.tool} produced an output that breaks its schema", bad)
        if key is not None:
            with self._lock:
                self._cache[key] = doc
                if len(self._cache) > _CACHE_ENTRIES:
                    self._cache.popitem(last=False)
        return result(ok=True, result=doc)

    def _cached(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            doc = self._cache.get(key)
            if doc is not None:
                self._cache.move_to_end(key)
            return doc


def local_executor(*, gpus: int | None = None, runner: str = "in-process") -> ToolExecutor:
    """The executor the toolrunner service runs, for use in this process: every tool of the catalog and
    every check (schemas, GPU, paths, output, cache). `gpus` None counts the GPUs NVML sees. Paths are
    checked but not confined to task roots: the caller names its own files, as `kpilot verify` does."""
    return ToolExecutor(load_specs(), gpus=gpu_count() if gpus is None else gpus, runner=runner)
