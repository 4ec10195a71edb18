"""Capture the planted-bottleneck corpus fixtures (dev script, not a service; needs no GPU).

For each case in corpus/cases.py: triton.compile(ASTSource, GPUTarget("cuda", 90, 32)) -> TTGIR, PTX,
cubin; `ptxas -v --gpu-name sm_90a` on the PTX -> ptxas info; `nvdisasm --print-line-info -c` on the cubin
-> SASS with source lines (the ptxas/nvdisasm bundled in the Triton wheel). Absolute paths of this repo
are rewritten to repo-relative ones so fixtures do not depend on the checkout. Writes
corpus/<case>/{kernel.ttgir,kernel.ptx,kernel.sass,ptxas.txt,meta.json} (bench_* cases feed
benchmarks/bench_decomposer.py and are not scored).

    .venv/bin/python tests/decomposer/capture_corpus.py [case ...]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))


def _signature(case) -> tuple[dict[str, str], dict[str, object], dict[tuple[int, ...], list]]:
    names = case.fn.arg_names
    sig: dict[str, str] = {}
    attrs: dict[tuple[int, ...], list] = {}
    for i, name in enumerate(names):
        if name in case.constexprs:
            sig[name] = "constexpr"
            continue
        v = case.args[name]
        if isinstance(v, str):
            sig[name] = v
            if v.startswith("*"):
                attrs[(i,)] = [["tt.divisibility", 16]]  # torch allocations are 16 B aligned
        else:
            sig[name] = "i32"
            if v % 16 == 0:  # what Triton's JIT specialises on
                attrs[(i,)] = [["tt.divisibility", 16]]
    return sig, dict(case.constexprs), attrs


def capture(case, out_root: Path) -> Path:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    bindir = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    sig, constexprs, attrs = _signature(case)
    src = ASTSource(case.fn, signature=sig, constexprs=constexprs, attrs=attrs)
    k = triton.compile(
        src,
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": case.num_warps, "num_stages": case.num_stages},
    )
    out = out_root / case.name
    out.mkdir(parents=True, exist_ok=True)
    prefix = str(ROOT) + "/"

    def rel(text: str) -> str:
        return text.replace(prefix, "")

    with tempfile.TemporaryDirectory() as tmp:
        ptx = Path(tmp) / "k.ptx"
        cubin = Path(tmp) / "k.cubin"
        ptx.write_text(k.asm["ptx"])
        cubin.write_bytes(k.asm["cubin"])
        arch = "sm_90a"
        info = subprocess.run(
            [
                str(bindir / "ptxas"),
                "-v",
                "-lineinfo",
                f"--gpu-name={arch}",
                str(ptx),
                "-o",
                str(Path(tmp) / "v.cubin"),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        sass = subprocess.run(
            [str(bindir / "nvdisasm"), "--print-line-info", "-c", str(cubin)],
            capture_output=True,
            text=True,
            check=True,
        )
    (out / "kernel.ttgir").write_text(rel(k.asm["ttgir"]))
    (out / "kernel.ptx").write_text(rel(k.asm["ptx"]))
    (out / "kernel.sass").write_text(rel(sass.stdout))
    (out / "ptxas.txt").write_text(rel(info.stderr + info.stdout).replace(tmp, "<tmp>"))
    meta = {
        "case": case.name,
        "kernel": k.metadata.name,
        "expect": case.expect,
        "grid": list(case.grid),
        "flops": case.flops,
        "bytes_moved": case.bytes_moved,
        "precision": case.precision,
        "kernels_in_task": case.kernels_in_task,
        "num_warps": case.num_warps,
        "num_stages": case.num_stages,
        "shared_bytes": k.metadata.shared,
        "constexprs": {str(a): str(b) for a, b in constexprs.items()},
        "triton": str(triton.__version__),
        "target": "cuda:90",
        "captured_by": "tests/decomposer/capture_corpus.py",
        "bench_only": case.name.startswith("bench_"),
        "kind": case.kind,
        "origin": case.origin,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return out


def main(argv: list[str]) -> int:
    from tests.decomposer.corpus.cases import BENCH_CASES, CASES

    wanted = set(argv)
    failed = []
    for case in CASES + BENCH_CASES:
        if wanted and case.name not in wanted:
            continue
        try:
            print(capture(case, HERE / "corpus"))
        except Exception as exc:  # noqa: BLE001 - a dev script: report and go on to the next case
            failed.append(case.name)
            print(f"FAILED {case.name}: {type(exc).__name__}: {str(exc)[:400]}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
