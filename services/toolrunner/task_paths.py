"""Check the file paths a tool request names before anything opens them.

A path argument must be short enough to be a path, name a regular file (not /dev/zero, a fifo or a
directory) of bounded size, and, for requests from the bus, lie under an allowed root: the repo's
`examples/` and `benchmarks/tasks/`, the stack's candidate store, artifact store and captured tasks, and roots the
operator added (KPILOT_TASK_ROOTS). Every refusal says what to pass instead.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

import msgspec

from shared.subjects import CAPTURED_DIR

MAX_PATH_CHARS = 4096  # Linux PATH_MAX
# The largest task in the repo is 12 KB (benchmarks/tasks/l3_pipeline.py); a cubin of a big kernel ~2 MB.
MAX_FILE_BYTES = {".py": 1 << 20, ".cubin": 64 << 20}
# The request fields that name a file this runner opens, and the suffix each must have.
PATH_FIELDS = {"task_path": ".py", "candidate_path": ".py", "path": ".py", "cubin_path": ".cubin"}
# Directories the runner itself (not the sandbox) writes into: only under a root.
DIR_FIELDS = ("artifact_dir",)
ROOTS_VAR = "KPILOT_TASK_ROOTS"


class PathRefused(ValueError):
    """A path argument that cannot be used; the message says what to pass."""


class TaskRoots(msgspec.Struct, frozen=True):
    roots: tuple[str, ...]

    @classmethod
    def for_stack(cls, state: Path, extra: Sequence[str | Path] = ()) -> TaskRoots:
        repo = Path(__file__).resolve().parents[2]
        dirs = [repo / "examples", repo / "benchmarks" / "tasks", state / "candidates", state / "toolrunner",
                state / CAPTURED_DIR, *map(Path, extra)]
        return cls(tuple(dict.fromkeys(os.path.realpath(d) for d in dirs)))

    def holds(self, real: str) -> bool:
        return any(real.startswith(r.rstrip("/") + "/") for r in self.roots)


def roots_from_env(state: Path, environ: dict[str, str]) -> TaskRoots:
    """The service's roots: defaults plus the `:`-separated dirs of KPILOT_TASK_ROOTS."""
    extra = [p for p in environ.get(ROOTS_VAR, "").split(os.pathsep) if p]
    return TaskRoots.for_stack(state, extra)


def check_file(path: str, *, field: str = "task_path", roots: TaskRoots | None = None) -> str:
    """The real path of a usable file named by `field`, or PathRefused naming the fix."""
    suffix = PATH_FIELDS.get(field, ".py")
    what = "a task .py file" if suffix == ".py" else f"a {suffix} file"
    if len(path) > MAX_PATH_CHARS:
        raise PathRefused(f"{field}: a path of {len(path)} characters (the limit is {MAX_PATH_CHARS}); "
                          f"pass the path of {what}")
    if "\0" in path or not path:
        raise PathRefused(f"{field}: {path!r} is not a path; pass the path of {what}")
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except FileNotFoundError:
        raise PathRefused(f"{field}: no such file: {path} (pass the path of {what})") from None
    except (OSError, ValueError) as e:
        raise PathRefused(f"{field}: cannot use {path[:200]}: {e.strerror if isinstance(e, OSError) else e} "
                          f"(pass the path of {what})") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "a device, fifo or socket"
        raise PathRefused(f"{field}: {path} is {kind}, not a regular file; pass the path of {what}")
    if not real.endswith(suffix):
        raise PathRefused(f"{field}: {Path(real).name} is not a {suffix} file (pass the path of {what})")
    limit = MAX_FILE_BYTES[suffix]
    if st.st_size > limit:
        raise PathRefused(f"{field}: {path} is {st.st_size} bytes, over the {limit}-byte limit for {what}")
    if roots is not None and not roots.holds(real):
        raise PathRefused(f"{field}: {real} is outside the allowed task roots ({', '.join(roots.roots)}); "
                          f"put it under examples/ or add its directory to {ROOTS_VAR}")
    return real


def check_request(args: dict[str, object], roots: TaskRoots | None) -> list[str]:
    """Every problem with the path fields of a tool request's arguments (empty: all usable)."""
    problems = []
    for field in PATH_FIELDS:
        value = args.get(field)
        if isinstance(value, str) and value:
            try:
                check_file(value, field=field, roots=roots)
            except PathRefused as e:
                problems.append(str(e))
    for field in DIR_FIELDS:
        value = args.get(field)
        if isinstance(value, str) and value and roots is not None:
            real = os.path.realpath(value[:MAX_PATH_CHARS])
            if len(value) > MAX_PATH_CHARS or not roots.holds(real + "/"):
                problems.append(f"{field}: {value[:200]} is outside the allowed roots "
                                f"({', '.join(roots.roots)}); leave it empty or add it to {ROOTS_VAR}")
    return problems
