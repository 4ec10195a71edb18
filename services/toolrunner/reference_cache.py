"""The task's reference outputs, computed once per (task file, shape, seed) and reused by every candidate.

Every candidate of a job is checked against the same task: run_correctness and honesty_probe ran the
task's `reference()` in a fresh sandboxed process for each candidate (two of the micro layer's four
processes; 4.1 s of its 9.6 s on CPU for vector_add, benchmarks/profile_funnel.py), although its outputs on
one case do not depend on the candidate. Here a reference case is run once and its per-case record and
.npy output bytes are kept for the next candidates.

The key is a sha256 over everything that can change the output: the worker module and the source of
every file of the tools' and the workers' code (services/toolrunner/tools/, worker_lib/, task_runtime.py,
tricks.py), the versions of torch, triton and numpy, the sandbox limits that change what runs
(interpreter, GPU index, extra environment), the task file's path and sha256, and the reference-side
request for that one case (every field but the output directory). Only cases that ran to the end are kept (the callers decide); a
case whose reference raised runs again.

Where: in this process's memory only, never on disk. A candidate process cannot write or read it, not
even one run unconfined (the operator's unsafe opt-out, where a worker shares the runner's uid and file
system): as before, no reference output is on any disk while a candidate runs.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import msgspec

from services.toolrunner.sandbox import Limits

# The examples keep 0.2-1.2 MB each (micro + edge shapes x 3 seeds: matmul 0.24 MB, row_softmax 0.49 MB,
# vector_add 1.25 MB); a full-shape GEMM output is 256 MiB (sandbox.py, file_mb). 512 MiB holds the cases
# of hundreds of such tasks and bounds the runner's memory; the least recently used go first.
MAX_BYTES = 512 << 20
_HERE = Path(__file__).resolve().parent
# The code a reference side runs besides the task file: a change to any of it is a new key.
_WORKER_CODE = (_HERE / "task_runtime.py", _HERE / "tricks.py")
_PACKAGES = ("torch", "triton", "numpy")


@dataclass(frozen=True)
class CachedCase:
    device_name: str
    record: bytes  # the worker's JSON record of the case (CaseOutput, CallRecord)
    files: dict[str, bytes]  # output file name -> its bytes (.npy)

    @property
    def nbytes(self) -> int:
        return len(self.record) + sum(len(b) for b in self.files.values())


def _code_digest() -> str:
    h = hashlib.sha256()
    for path in sorted([*(_HERE / "tools").glob("*/*.py"), *(_HERE / "worker_lib").glob("*.py"), *_WORKER_CODE]):
        h.update(str(path.relative_to(_HERE)).encode() + b"\0" + path.read_bytes() + b"\0")
    for name in _PACKAGES:
        try:
            h.update(f"{name}={importlib.metadata.version(name)}\0".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"{name}=none\0".encode())
    return h.hexdigest()


class ReferenceCache:
    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self._code = _code_digest()
        self._entries: OrderedDict[str, CachedCase] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # two tools may run at once (the runner's CPU pool)

    def key(self, worker: str, request: msgspec.Struct, task_path: str, limits: Limits) -> str:
        """The key of a one-case reference request (its `out_dir` is left out: it names a fresh dir)."""
        fields = {k: v for k, v in msgspec.to_builtins(request).items() if k != "out_dir"}
        with open(task_path, "rb") as fh:
            digest = hashlib.file_digest(fh, "sha256").digest()
        h = hashlib.sha256(f"{worker}\0{self._code}\0{Path(task_path).resolve()}\0".encode() + digest)
        h.update(msgspec.json.encode([fields, limits.interpret, limits.gpu, sorted(limits.env)]))
        return h.hexdigest()

    def get(self, key: str) -> CachedCase | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry

    def put(self, key: str, device_name: str, record: bytes, files: dict[str, bytes]) -> None:
        entry = CachedCase(device_name=device_name, record=record, files=dict(files))
        if entry.nbytes > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            self._bytes += entry.nbytes - (old.nbytes if old else 0)
            self._entries[key] = entry
            while self._bytes > self.max_bytes:
                self._bytes -= self._entries.popitem(last=False)[1].nbytes


_default: ReferenceCache | None = None
_default_lock = threading.Lock()


def default_cache() -> ReferenceCache:
    """This process's cache, made on first use (not at import: import is silent)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = ReferenceCache()
        return _default
