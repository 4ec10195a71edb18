"""The toolrunner's served-path shortcuts: a cache hit answered without a worker thread (same checks as
`execute`), and artifacts already in the object store not asked about again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import pytest
from nats.js.errors import ObjectNotFoundError

from services.toolrunner.registry import ToolExecutor
from services.toolrunner.service import ArtifactMirror
from services.toolrunner.task_paths import TaskRoots
from services.toolrunner.tool import ToolSpec
from shared.messages import ToolRequest


class Args(msgspec.Struct, forbid_unknown_fields=True):
    task_path: str
    n: int = 1


class Out(msgspec.Struct):
    lines: int


def _executor(tmp_path: Path, runs: list[str]) -> ToolExecutor:
    def run(args: Args) -> Out:
        runs.append(args.task_path)
        return Out(lines=len(Path(args.task_path).read_text().splitlines()))

    spec = ToolSpec(name="count", order=10, version="1", description="lines of a task", input=Args, output=Out, run=run,
                    cacheable=True)
    return ToolExecutor({"count": spec}, gpus=0, runner="test", roots=TaskRoots((str(tmp_path.resolve()),)))


def test_cached_answers_only_what_execute_cached_and_sees_a_changed_file(tmp_path: Path) -> None:
    task = tmp_path / "t.py"
    task.write_text("a = 1\n")
    runs: list[str] = []
    ex = _executor(tmp_path, runs)
    req = ToolRequest(source="test", tool="count", args={"task_path": str(task)}, job_id="job-1")
    assert ex.cached(req) is None  # nothing cached yet: the caller runs it in a thread
    first = ex.execute(req)
    assert first.ok and not first.cached and runs == [str(task)]
    hit = ex.cached(req)
    assert hit is not None and hit.ok and hit.cached and hit.result == first.result and hit.job_id == "job-1"
    task.write_text("a = 1\nb = 2\n")  # the key covers the file's content
    assert ex.cached(req) is None
    assert ex.execute(req).result == {"lines": 2} and len(runs) == 2


def test_a_file_hashed_once_is_read_again_only_when_it_changed(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from services.toolrunner import registry
    task = tmp_path / "t.py"
    task.write_text("a = 1\n")
    old = (1_700_000_000, 1_700_000_000)
    os.utime(task, old)
    reads: list[str] = []
    real = registry.hashlib.file_digest

    def counted(fh, name):  # type: ignore[no-untyped-def]
        reads.append(fh.name)
        return real(fh, name)

    monkeypatch.setattr(registry.hashlib, "file_digest", counted)
    monkeypatch.setattr(registry, "_RACY_NS", 0)  # utime just moved the ctime: trust it at once here
    first = registry.file_sha256(str(task))
    assert registry.file_sha256(str(task)) == first and len(reads) == 1  # the second from its stat
    task.write_text("b = 2\n")  # same size, and the old mtime put back: the ctime still moves
    os.utime(task, old)
    assert registry.file_sha256(str(task)) != first and len(reads) == 2
    monkeypatch.setattr(registry, "_RACY_NS", 2_000_000_000)
    fresh = tmp_path / "new.py"  # changed just now: hashed on every call (one clock tick may hide a write)
    fresh.write_text("c = 3\n")
    registry.file_sha256(str(fresh))
    registry.file_sha256(str(fresh))
    assert len(reads) == 4
    assert registry.file_sha256(str(tmp_path)) is None  # a directory is no file


def test_cached_refuses_what_execute_refuses(tmp_path: Path) -> None:
    task = tmp_path / "t.py"
    task.write_text("a = 1\n")
    ex = _executor(tmp_path, [])
    assert ex.execute(ToolRequest(source="test", tool="count", args={"task_path": str(task)})).ok
    bad = ToolRequest(source="test", tool="count", args={"task_path": str(task), "n": "two"})
    assert ex.cached(bad) is None
    out = ex.execute(bad)  # validated again (the remembered arguments were other ones)
    assert not out.ok and out.error is not None and out.error.code == "invalid_request"
    good = ToolRequest(source="test", tool="count", args={"task_path": str(task)})
    assert ex.cached(good) is not None
    ex.roots = TaskRoots((str((tmp_path / "other").resolve()),))  # the file is no longer under a root
    assert ex.cached(good) is None  # cached, yet the path rules are checked again
    assert ex.execute(good).error.code == "refused"  # type: ignore[union-attr]
    assert ex.cached(ToolRequest(source="test", tool="nope", args={})) is None


class _Store:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.asked: list[str] = []

    async def get_info(self, key: str) -> object:
        self.asked.append(key)
        if key not in self.objects:
            raise ObjectNotFoundError
        return object()

    async def put(self, key: str, data: bytes, meta: object = None) -> None:
        self.objects[key] = data


class _Compiler:
    class store:  # the shape of compile.Compiler.store
        @staticmethod
        def get(key: str) -> bytes:
            return key.encode()


def test_artifacts_are_stored_once_and_not_asked_about_again() -> None:
    store = _Store()
    mirror = ArtifactMirror(store, _Compiler(), remember=2)  # type: ignore[arg-type]
    record = {"artifacts": [{"sha256": "a", "kind": "ptx"}, {"sha256": "b", "kind": "cubin"}]}

    async def go() -> None:
        await mirror.mirror(record)
        await mirror.mirror(record)  # a cached compile names the same artifacts

    asyncio.run(go())
    assert store.objects == {"a": b"a", "b": b"b"} and store.asked == ["a", "b"]
    asyncio.run(mirror.mirror({"artifacts": [{"sha256": "c", "kind": "ttir"}]}))  # "a" is forgotten (remember=2)
    asyncio.run(mirror.mirror(record))  # "a" is asked again and pushes "b" out, so "b" is asked too
    assert store.asked == ["a", "b", "c", "a", "b"] and len(store.objects) == 3
