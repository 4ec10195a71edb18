"""Worker: import a task file in the sandbox and describe it (a TaskManifest) or list its problems."""

from __future__ import annotations

import hashlib
import traceback
from pathlib import Path

import msgspec

from services.toolrunner.worker_lib.io import read_request, write_result
from shared.tools.task import LoadTaskInput, TaskManifest


class LoadTaskResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    manifest: TaskManifest | None = None
    problems: list[str] = []


def _where(e: BaseException, path: str) -> str:
    """ " (line N of FILE)" for the deepest frame in the task file, else the deepest frame."""
    if isinstance(e, SyntaxError) and e.lineno is not None:
        return f" (line {e.lineno} of {e.filename})"
    frames = traceback.extract_tb(e.__traceback__)
    own = [f for f in frames if f.filename == path]
    f = (own or frames or [None])[-1]
    return f" (line {f.lineno} of {f.filename})" if f is not None else ""


def main() -> None:
    req = read_request(LoadTaskInput)
    path = Path(req.path).resolve()
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    try:
        from services.toolrunner.task_runtime import import_task

        module = import_task(path)
    except Exception as e:  # noqa: BLE001 - user code: the error is the result
        problem = f"importing the task raised {type(e).__name__}: {e}{_where(e, str(path))}"
        write_result(LoadTaskResult(problems=[problem]))
        return
    from services.toolrunner.task_parts import describe

    manifest, problems = describe(module, str(path), sha)
    write_result(LoadTaskResult(manifest=manifest, problems=problems))


if __name__ == "__main__":
    main()
