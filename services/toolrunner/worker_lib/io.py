"""The worker side of the sandbox protocol: read the request from stdin, write the result file."""

from __future__ import annotations

import os
import sys
from typing import NoReturn, TypeVar

import msgspec

T = TypeVar("T")


def read_request(type_: type[T]) -> T:
    return msgspec.json.decode(sys.stdin.buffer.read(), type=type_)


def write_result(result: object) -> None:
    path = os.environ["KPILOT_RESULT"]
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(msgspec.json.encode(result))
    os.replace(tmp, path)  # atomic: a worker killed mid-write leaves no half result


def finish(result: object) -> NoReturn:
    """Write the result and end the process at once (`os._exit`): a worker that ran user code ends
    before that code's `atexit` hooks, finalisers and non-daemon threads could rewrite what it saved."""
    write_result(result)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
