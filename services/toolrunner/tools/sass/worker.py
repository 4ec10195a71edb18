"""Worker: disassemble a cubin with the nvdisasm or cuobjdump bundled in the Triton wheel.

`TRITON_NVDISASM_PATH` / `TRITON_CUOBJDUMP_PATH` override the bundled binaries (the sandbox passes them).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import msgspec

from services.toolrunner.worker_lib.io import read_request, write_result


class DisasmRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    cubin_path: str
    disassembler: str  # "nvdisasm" | "cuobjdump"


class DisasmResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    ok: bool
    text: str = ""
    version: str = ""
    message: str = ""


def tool_path(name: str) -> str:
    override = os.environ.get(f"TRITON_{name.upper()}_PATH")
    if override:
        return override
    spec = importlib.util.find_spec("triton")  # locate the wheel without importing triton (~1 s)
    if spec is None or spec.origin is None:
        return name  # fall back to PATH
    return str(Path(spec.origin).parent / "backends" / "nvidia" / "bin" / name)


def main() -> None:
    req = read_request(DisasmRequest)
    exe = tool_path(req.disassembler)
    # -c: code only (no ELF dump); -gi: source file and line (with inlining) per instruction.
    args = (
        [exe, "-c", "-gi", req.cubin_path]
        if req.disassembler == "nvdisasm"
        else [exe, "-sass", req.cubin_path]
    )
    p = subprocess.run(args, capture_output=True, check=False, text=True)
    v = subprocess.run([exe, "--version"], capture_output=True, check=False, text=True)
    lines = v.stdout.strip().splitlines()
    version = f"{req.disassembler}: " + next(
        (ln for ln in lines if "release" in ln), lines[-1] if lines else ""
    )
    if p.returncode != 0:
        write_result(
            DisasmResult(
                ok=False,
                version=version,
                message=f"{req.disassembler} exited {p.returncode}: {p.stderr.strip()[-2000:]}",
            )
        )
        return
    write_result(DisasmResult(ok=True, text=p.stdout, version=version))


if __name__ == "__main__":
    main()
