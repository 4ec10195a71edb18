"""Capture the CUDA C++ half of the planted-bottleneck corpus (dev script, not a service; needs no GPU).

For each case in corpus/cuda_cases.py, in a scratch dir holding `<case>.cu`:
  nvcc -arch=sm_90 -ptx -lineinfo            -> kernel.ptx
  nvcc -arch=sm_90 -cubin -lineinfo -Xptxas -v -> ptxas.txt (the -v report) and a cubin
  nvdisasm --print-line-info -c <cubin>      -> kernel.sass (Triton wheel's nvdisasm)
plus the flags of the case (e.g. -maxrregcount=32). The scratch path is rewritten to "<tmp>" so fixtures
do not depend on where they were made. Writes corpus/<case>/{<case>.cu,kernel.ptx,kernel.sass,
ptxas.txt,meta.json}; no kernel.ttgir: these are decomposed from PTX/SASS/ptxas alone.

    .venv/bin/python tests/decomposer/capture_cuda_corpus.py [case ...]
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))


def _tools() -> tuple[str, str]:
    import triton

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise SystemExit("nvcc is not on PATH: install the CUDA toolkit (CUDA 13.0 made the fixtures)")
    return nvcc, str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "nvdisasm")


def _version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    return out.strip().splitlines()[-1]


def capture(case, out_root: Path) -> Path:
    nvcc, nvdisasm = _tools()
    out = out_root / case.name
    out.mkdir(parents=True, exist_ok=True)
    src_name = f"{case.name}.cu"
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / src_name).write_text(case.source)
        base = [nvcc, "-arch=sm_90", "-lineinfo", *case.nvcc_flags]
        subprocess.run([*base, "-ptx", src_name, "-o", "k.ptx"], cwd=t, check=True, capture_output=True)
        info = subprocess.run(
            [*base, "-cubin", "-Xptxas", "-v", src_name, "-o", "k.cubin"],
            cwd=t,
            check=True,
            capture_output=True,
            text=True,
        )
        sass = subprocess.run(
            [nvdisasm, "--print-line-info", "-c", "k.cubin"],
            cwd=t,
            check=True,
            capture_output=True,
            text=True,
        )
        ptx = (t / "k.ptx").read_text()

    def rel(text: str) -> str:
        return text.replace(tmp + "/", "").replace(tmp, "<tmp>")

    (out / src_name).write_text(case.source)
    (out / "kernel.ptx").write_text(rel(ptx))
    (out / "kernel.sass").write_text(rel(sass.stdout))
    (out / "ptxas.txt").write_text(rel(info.stderr + info.stdout))
    meta = {
        "case": case.name,
        "kernel": case.kernel,
        "language": "cuda",
        "source": src_name,
        "expect": case.expect,
        "grid": list(case.grid),
        "block": list(case.block),
        "flops": case.flops,
        "bytes_moved": case.bytes_moved,
        "precision": "exact",
        "kernels_in_task": case.kernels_in_task,
        "num_warps": max(1, (case.block[0] if case.block else 32) // 32),
        "num_stages": None,
        "shared_bytes": None,
        "nvcc": _version(nvcc),
        "nvcc_flags": ["-arch=sm_90", "-lineinfo", *case.nvcc_flags],
        "target": "cuda:90",
        "captured_by": "tests/decomposer/capture_cuda_corpus.py",
        "bench_only": False,
        "kind": case.kind,
        **({"origin": case.origin} if case.origin else {}),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return out


def main(argv: list[str]) -> int:
    from tests.decomposer.corpus.cuda_cases import CUDA_CASES

    wanted = set(argv)
    failed = []
    for case in CUDA_CASES:
        if wanted and case.name not in wanted:
            continue
        try:
            print(capture(case, HERE / "corpus"))
        except subprocess.CalledProcessError as exc:
            failed.append(case.name)
            print(f"FAILED {case.name}: {exc.cmd}: {(exc.stderr or '')[-800:]}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
