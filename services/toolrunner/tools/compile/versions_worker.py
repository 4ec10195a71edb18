"""Worker: the versions (and paths) of every tool whose output a cached result depends on.

Triton's ptxas and cuobjdump are the ones Triton itself resolves (bundled, or TRITON_PTXAS_PATH /
TRITON_CUOBJDUMP_PATH); the CUDA toolkit's nvcc and ptxas are the ones on PATH.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from importlib.metadata import PackageNotFoundError, version

import msgspec

from services.toolrunner.worker_lib.io import read_request, write_result
from shared.tools.compile import ToolVersion

_RELEASE = re.compile(r"release [\d.]+, V([\d.]+)")


class VersionsRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    capability: int = 90


class VersionsResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    tools: list[ToolVersion]


def nvidia_version(path: str) -> str:
    """ "12.8.93" from `<tool> --version` ("Cuda compilation tools, release 12.8, V12.8.93"), or ""."""
    try:
        out = subprocess.run(
            [path, "--version"], check=False, capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = _RELEASE.search(out)
    return m.group(1) if m else ""


def main() -> None:
    req = read_request(VersionsRequest)
    tools = []
    for pkg in ("triton", "torch"):
        try:
            tools.append(ToolVersion(name=pkg, version=version(pkg)))
        except PackageNotFoundError:
            pass
    from triton.backends.nvidia.compiler import get_ptxas

    ptxas = get_ptxas(req.capability).path
    tools.append(ToolVersion(name="triton_ptxas", version=nvidia_version(ptxas), path=ptxas))
    from triton import knobs

    cuobjdump = knobs.nvidia.cuobjdump.path
    tools.append(ToolVersion(name="triton_cuobjdump", version=nvidia_version(cuobjdump), path=cuobjdump))
    for name in ("nvcc", "ptxas"):
        path = shutil.which(name)
        if path is not None:
            tools.append(ToolVersion(name=f"cuda_{name}", version=nvidia_version(path), path=path))
    write_result(VersionsResult(tools=tools))


if __name__ == "__main__":
    main()
