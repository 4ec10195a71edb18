"""What every transformation test does: apply it to a task, run the candidate against the task's reference
in Triton's interpreter (the toolrunner's correctness tool, CPU), compile both for cuda:90 and decompose
them (the decomposer's own code), so a test can say which pattern went away and what the PTX shows."""

from __future__ import annotations

from pathlib import Path

import msgspec

from services.decomposer.analyze import artifacts_from
from services.decomposer.decompose import decompose
from services.toolrunner.artifacts import LocalArtifactStore, LocalResultCache
from services.toolrunner.tools.compile.spec import Compiler
from services.toolrunner.tools.run_correctness.spec import run as run_correctness
from shared.messages import Scalar
from shared.tools.compile import CompileInput
from shared.tools.decompose import TaskFacts
from shared.tools.run import RunCorrectnessInput, RunCorrectnessOutput
from shared.transforms.base import Applied
from shared.transforms.table import apply

ROOT = Path(__file__).resolve().parents[2]


class Built(msgspec.Struct, kw_only=True):
    patterns: list[str]
    ptx: str
    ttgir: str


def candidate(task: str, name: str, tmp: Path, params: dict[str, Scalar] | None = None,
              source: str | None = None) -> tuple[Path, Applied]:
    got = apply(source if source is not None else (ROOT / task).read_text(), name, params or {})
    assert isinstance(got, Applied), got
    path = tmp / f"{name}.py"
    path.write_text(got.source)
    return path, got


def correct(task: str | Path, cand: Path, config: dict[str, Scalar] | None = None,
            shapes: tuple[str, ...] = ("micro", "edge")) -> RunCorrectnessOutput:
    return run_correctness(RunCorrectnessInput(task_path=str(ROOT / task), candidate_path=str(cand),
                                               config=config or {}, shapes=list(shapes), seeds=[0],
                                               device="cpu"))


def build(compiler: Compiler, path: str | Path, config: dict[str, Scalar] | None = None,
          facts: TaskFacts | None = None) -> Built:
    """`facts`: what the decomposer is told beyond the artifacts (e.g. the launch grid, for small_grid)."""
    out = compiler.run(CompileInput(task_path=str(ROOT / path), config=config or {}, include_text=True))
    d = decompose(artifacts_from(msgspec.to_builtins(out), None), facts)
    text = {a.kind: a.text or "" for a in out.artifacts}
    return Built(patterns=[f.pattern for f in d.findings], ptx=text.get("ptx", ""), ttgir=text.get("ttgir", ""))


def make_compiler(root: Path) -> Compiler:
    return Compiler(store=LocalArtifactStore(root / "artifacts"), cache=LocalResultCache(root / "cache"))
