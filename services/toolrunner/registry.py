"""Run one tool request: validate, check, execute, validate the output, cache; always a ToolResult.

Pure with respect to NATS: the adapter (service.py) and the in-process client (shared/toolclient.py's
`InProcessToolClient` over `local_executor()`: `kpilot verify`, the benchmarks, the tests) both call
`ToolExecutor.execute`, so every path gets the same checks.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
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
# A cache lookup reads and hashes the files the arguments name; up to this many bytes in all it is done on
# the event loop (~0.1 ms for a task file), beyond that in a worker thread like a run.
_INLINE_FILE_BYTES = 1 << 20


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
            if len(value) < MAX_PATH_CHARS and (digest := file_sha256(value)) is not None:
                h.update(digest)
        except (OSError, ValueError):
            h.update(b"\0unreadable")
    return h.hexdigest()


# path -> (its stat signature, its sha256) of files hashed here; a repeated call (a cache hit) stats its
# files instead of reading them again.
_DIGESTS: dict[str, tuple[tuple[int, ...], bytes]] = {}
_DIGESTS_MAX = 4096
# File times come from a coarse kernel clock: two writes within one tick can leave the same mtime and
# size. A file changed this recently is hashed on every call until it is older (git's "racy" rule).
_RACY_NS = 2_000_000_000


def file_sha256(path: str) -> bytes | None:
    """The sha256 of the regular file at `path` (None if it is not one; OSError if unreadable), read
    again only when its stat signature (device, inode, size, mtime, ctime) has changed."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        return None
    sig = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    known = _DIGESTS.get(path)
    if known is not None and known[0] == sig:
        return known[1]
    with open(path, "rb") as fh:  # streamed: a large file costs time, never memory
        digest = hashlib.file_digest(fh, "sha256").digest()
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > _RACY_NS:
        if len(_DIGESTS) >= _DIGESTS_MAX:
            _DIGESTS.clear()
        _DIGESTS[path] = (sig, digest)
    return digest


def _file_bytes(args: dict[str, Any]) -> int:
    """The size of every file the arguments name (what `cache_key` reads)."""
    total = 0
    for value in _strings(args):
        if len(value) < MAX_PATH_CHARS:
            try:
                st = os.stat(value)
            except (OSError, ValueError):
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


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
        self._valid: OrderedDict[tuple[str, str], None] = OrderedDict()  # arguments that passed the schema
        self._valid_lock = threading.Lock()
        self._cache_lock = threading.Lock()  # `cached` runs on the event loop while `execute` runs in threads

    def _input_violations(self, tool: str, schemas: Schemas, args: dict[str, Any]) -> list[str]:
        """The input schema's violations of `args`; arguments that passed once (the same canonical JSON
        for the same tool) are remembered, so a repeated call (a cache hit) is not validated again."""
        try:  # JSON values only: an in-process caller's Path is not the string it prints as
            canonical = (tool, json.dumps(args, sort_keys=True))
        except (TypeError, ValueError):
            return violations(schemas.input_validator, args)
        with self._valid_lock:  # execute runs in worker threads
            if canonical in self._valid:
                self._valid.move_to_end(canonical)
                return []
        found = violations(schemas.input_validator, args)
        if not found:
            with self._valid_lock:
                self._valid[canonical] = None
                if len(self._valid) > _CACHE_ENTRIES:
                    self._valid.popitem(last=False)
        return found

    def available(self) -> list[str]:
        """Tools this runner advertises: GPU tools only where a GPU is present."""
        return [n for n, s in self.specs.items() if self.gpus > 0 or not s.needs_gpu]

    def cached(self, req: ToolRequest, *, max_file_bytes: int = _INLINE_FILE_BYTES) -> ToolResult | None:
        """The cached result of `req`, admitted by the same checks as `execute` (tool, GPU, input schema,
        path rules, file contents in the key), or None: not cached, not cacheable, refused (`execute`
        says why), or naming files over `max_file_bytes` in all. Cheap enough for the event loop, so a
        repeated call is answered without a worker thread and without queueing behind running tools."""
        start = time.perf_counter()
        spec = self.specs.get(req.tool)
        if spec is None or not spec.cacheable or (spec.needs_gpu and self.gpus == 0):
            return None
        if _file_bytes(req.args) > max_file_bytes or self._input_violations(req.tool, self.schemas[req.tool],
                                                                             req.args):
            return None
        if check_request(req.args, self.roots):
            return None
        key = cache_key(spec, req.args)
        with self._cache_lock:
            doc = self._cache.get(key)
            if doc is None:
                return None
            self._cache.move_to_end(key)
        return ToolResult(source="toolrunner", tool=req.tool, tool_version=spec.version, ok=True, result=doc,
                          cached=True, duration_s=time.perf_counter() - start, runner=self.runner,
                          **req.caused())

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
        if found := self._input_violations(req.tool, schemas, req.args):
            return fail("invalid_request", f"{req.tool}: {len(found)} problem(s) in the arguments; see "
                        f"`kpilot tool --list` for the input schema", found)
        if bad := check_request(req.args, self.roots):
            return fail("refused", f"{req.tool}: {bad[0]}", bad)
        key = cache_key(spec, req.args) if spec.cacheable else None
        with self._cache_lock:
            doc = self._cache.get(key) if key is not None else None
            if doc is not None:
                self._cache.move_to_end(key)  # type: ignore[arg-type]
        if doc is not None:
            return result(ok=True, result=doc, cached=True)
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
            with self._cache_lock:
                self._cache[key] = doc
                if len(self._cache) > _CACHE_ENTRIES:
                    self._cache.popitem(last=False)
        return result(ok=True, result=doc)

def local_executor(*, gpus: int | None = None, runner: str = "in-process") -> ToolExecutor:
    """The executor the toolrunner service runs, for use in this process: every tool of the catalog and
    every check (schemas, GPU, paths, output, cache). `gpus` None counts the GPUs NVML sees. Paths are
    checked but not confined to task roots: the caller names its own files, as `kpilot verify` does."""
    return ToolExecutor(load_specs(), gpus=gpu_count() if gpus is None else gpus, runner=runner)
