"""Load a captured corpus case (tests/decomposer/corpus/<case>/) as decomposer inputs."""

from __future__ import annotations

import json
from pathlib import Path

from shared.tools.decompose import Artifacts, TaskFacts

CORPUS = Path(__file__).resolve().parent / "corpus"


def case_dirs(bench: bool = False) -> list[Path]:
    """Scored corpus cases (default) or the bench_* inputs of benchmarks/bench_decomposer.py."""
    return sorted(
        p for p in CORPUS.iterdir() if (p / "meta.json").is_file() and p.name.startswith("bench_") == bench
    )


def load(case: str | Path) -> tuple[Artifacts, TaskFacts, dict]:
    d = case if isinstance(case, Path) else CORPUS / case
    meta = json.loads((d / "meta.json").read_text())
    ttgir = d / "kernel.ttgir"  # absent for CUDA C++ cases (capture_cuda_corpus.py)
    art = Artifacts(
        ttgir=ttgir.read_text() if ttgir.is_file() else "",
        ptx=(d / "kernel.ptx").read_text(),
        sass=(d / "kernel.sass").read_text(),
        ptxas_info=(d / "ptxas.txt").read_text(),
        shared_bytes=meta["shared_bytes"],
        num_stages=meta["num_stages"],
        kernel=meta["kernel"],
    )
    facts = TaskFacts(
        grid=meta["grid"],
        block=meta.get("block", []),
        flops=meta["flops"] or None,
        bytes_moved=meta["bytes_moved"] or None,
        precision=meta["precision"],
        kernels_in_task=meta["kernels_in_task"],
    )
    return art, facts, meta
