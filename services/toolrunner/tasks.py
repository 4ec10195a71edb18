"""Load a kernel task file into a `TaskManifest` without importing it in this process.

The task is user code: a sandboxed worker (worker_lib/load_task.py) imports it and checks every part
(task_parts.py). A task with problems is refused with all of them listed, each naming the part and
showing the form it should take.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from services.toolrunner.sandbox import Limits, run_worker
from services.toolrunner.task_paths import PathRefused, check_file
from services.toolrunner.worker_lib.load_task import LoadTaskResult
from shared.tools.task import LoadTaskInput, TaskManifest

# Importing torch + triton and the task takes ~3 s on a 2-core CI machine; 120 s leaves room for a slow
# disk while still catching a task whose import never returns.
LOAD_LIMITS = Limits(timeout_s=120.0, memory_mb=8192)


class TaskError(ValueError):
    """A task file that cannot be used; `problems` lists every part that is missing or wrong."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"task {path} refused ({len(self.problems)} problem"
            f"{'s' * (len(self.problems) != 1)}; see examples/README.md):\n{lines}"
        )


def _checked(path: str | Path) -> Path:
    """A regular .py file of bounded size, before anything reads it (no /dev/zero, no 10,000-char path)."""
    try:
        return Path(check_file(str(path)))
    except PathRefused as e:
        raise TaskError(str(path)[:200], [str(e).removeprefix("task_path: ")]) from None


def load_task(path: str | Path, limits: Limits = LOAD_LIMITS) -> TaskManifest:
    """The task's manifest; the file is imported only by a sandboxed worker, never in this process."""
    p = _checked(path)
    outcome = run_worker(
        "services.toolrunner.worker_lib.load_task", msgspec.json.encode(LoadTaskInput(path=str(p))), limits
    )
    if outcome.status != "ok" or outcome.result is None:
        raise TaskError(str(p), [f"loading the task {outcome.status}: {outcome.message}"])
    res = msgspec.json.decode(outcome.result, type=LoadTaskResult)
    if res.problems or res.manifest is None:
        raise TaskError(str(p), res.problems or ["the loader returned no manifest"])
    return res.manifest


# Manifests by (path, content hash): a tool call checks and then runs, and a planner job calls many tools
# on one task; each load is a ~2 s sandboxed import. A changed file has a new hash and is loaded afresh.
_MANIFESTS: dict[tuple[str, str], TaskManifest] = {}
_MANIFESTS_MAX = 256


def load_task_cached(path: str | Path) -> TaskManifest:
    p = _checked(path)
    try:
        sha = hashlib.sha256(p.read_bytes()).hexdigest()
    except OSError:
        return load_task(p)  # raises the TaskError that names the problem
    key = (str(p), sha)
    if key not in _MANIFESTS:
        manifest = load_task(p)
        if len(_MANIFESTS) >= _MANIFESTS_MAX:
            _MANIFESTS.pop(next(iter(_MANIFESTS)))
        _MANIFESTS[key] = manifest
    return _MANIFESTS[key]


def load_for_tool(path: str | Path, what: str = "") -> TaskManifest:
    """The manifest a tool checks a request against, cached by path + content hash (each load is a
    sandboxed ~1.2-1.9 s import on 2 cores, benchmarks/profile_funnel.py; an edited file is loaded anew).
    A task that cannot be used becomes ToolFailure("refused") with its problems; `what` ("candidate")
    prefixes the message when a tool loads more than one file."""
    from services.toolrunner.tool import ToolFailure

    try:
        return load_task_cached(path)
    except TaskError as e:
        raise ToolFailure("refused", f"{what}: {e}" if what else str(e), e.problems) from None
