"""Where compiler artifacts and cached tool results live.

`ArtifactStore` is content-addressed (key = sha256 of the bytes), so equal artifacts are stored once and
a key names one content forever. `ResultCache` maps a tool's cache key to its output record. Both come in
a local-directory form here; a JetStream object-store / KV form plugs into the same protocols.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Protocol, TypeVar

import msgspec

T = TypeVar("T", bound=msgspec.Struct)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ArtifactStore(Protocol):
    def put(self, data: bytes) -> str:
        """Store `data`; returns its sha256 hex digest, the key."""
        ...

    def get(self, key: str) -> bytes:
        """The bytes stored under `key`; raises KeyError when absent."""
        ...

    def has(self, key: str) -> bool: ...


class ResultCache(Protocol):
    def get(self, key: str, type_: type[T]) -> T | None:
        """The record cached under `key`, or None (also when it no longer decodes as `type_`)."""
        ...

    def put(self, key: str, record: msgspec.Struct) -> None: ...


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)  # a reader never sees half a file
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _check_key(key: str) -> str:
    if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        raise KeyError(f"not a sha256 hex key: {key!r}")
    return key


class LocalArtifactStore:
    """Files under `root/<first 2 hex>/<sha256>`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        key = _check_key(key)
        return self.root / key[:2] / key

    def put(self, data: bytes) -> str:
        key = sha256_hex(data)
        path = self._path(key)
        if not path.exists():
            _atomic_write(path, data)
        return key

    def get(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise KeyError(f"artifact {key} is not in the store at {self.root}") from None

    def has(self, key: str) -> bool:
        return self._path(key).exists()


class LocalResultCache:
    """One JSON file per cache key under `root/`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def get(self, key: str, type_: type[T]) -> T | None:
        path = self.root / f"{_check_key(key)}.json"
        try:
            return msgspec.json.decode(path.read_bytes(), type=type_)
        except FileNotFoundError:
            return None
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None  # written by an older record version: recompute

    def put(self, key: str, record: msgspec.Struct) -> None:
        _atomic_write(self.root / f"{_check_key(key)}.json", msgspec.json.encode(record))
