"""Every benchmark-suite task loads with load_task and passes CPU correctness on its micro + edge shapes.
(Its FLOP/byte formulas and library baselines are checked in test_baselines_cpu.py.)

The real path: the tool loader's sandboxed worker, then the run_correctness tool (through its SPEC,
in-process runner, sandboxed candidate and reference) in Triton's CPU interpreter; bf16 tasks run their
fp16 twin. The CUDA C++ task cannot run on CPU (NVRTC launch), so its source is compiled by nvcc for
sm_90a under each kernel variant instead. Seed 0 only, to keep the whole file near 2-3 minutes on 2 cores.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks.suite import TASKS_DIR, all_tasks, read_meta
from services.toolrunner.tasks import load_task
from services.toolrunner.tools.run_correctness.spec import SPEC as CORRECTNESS
from shared.tools.run import RunCorrectnessInput

TASKS = all_tasks()
# Structural knobs whose other values change the code path (not just tile sizes): checked on micro.
ALTERNATES = {
    # l3_pipeline's X_LAYOUT switch is gone (issue 20): tests/transforms/test_relayout_intermediate.py checks
    # the transformation that reaches its token-major variant.
    # l1_col_reduce's row split and l1_cross_entropy's chunk max are transformations now (split_k,
    # chunk_max), checked on these tasks by tests/transforms/test_suite_variants.py.
    # l2_matmul_irregular's PAD_ALIGN is aligned_copies extents=1 now (tests/transforms/test_memory_transforms.py,
    # tests/benchmarks/test_irregular_pad_align.py).
    # The attention tasks hold their straightforward kernel only (issue 20): the split key loop they used
    # to carry as SPLIT_MASK = 1 is the split_key_loop transformation, checked on micro + edge shapes in
    # tests/transforms/test_attention_transforms.py.
}
# Alternates checked on the edge shapes too (a 1-row matrix, a 1-logit vocabulary), not micro alone.
ALTERNATE_SHAPES = {
    "l2_matmul_irregular": ["micro", "edge"],
}


def test_the_suite_has_every_level_and_at_least_18_tasks() -> None:
    metas = [read_meta(p) for p in TASKS]
    assert len(metas) >= 18, [m.name for m in metas]
    levels = {m.level for m in metas}
    assert levels == {"L1", "L2", "L3", "L4"}
    for m in metas:
        assert m.name.startswith(m.level.lower() + "_"), f"{m.name}: file prefix must match LEVEL {m.level}"


def _correctness(path: Path, shapes: list[str], config: dict | None = None):
    return CORRECTNESS.run(
        RunCorrectnessInput(
            task_path=str(path), shapes=shapes, seeds=[0], device="cpu", config=config or {}, timeout_s=300.0
        )
    )


def _literals(path: Path) -> dict[str, object]:
    """The task's top-level literal assignments (SHAPES, CONFIG, SPACE, DTYPE, ...), read without importing."""
    out: dict[str, object] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


@pytest.mark.slow
@pytest.mark.parametrize("path", TASKS, ids=[p.stem for p in TASKS])
def test_task_loads_and_is_correct_on_cpu(path: Path) -> None:
    meta = read_meta(path)
    parts = _literals(path)
    assert parts.get("SPACE") and parts.get("CONFIG"), "a suite task must be tunable (CONFIG + SPACE)"
    # Edge shapes: a tiny one (some dimension 1) and one whose sizes are not multiples of any block.
    edge = parts["SHAPES"]["edge"]  # type: ignore[index]
    dims = [list(e.values()) for e in edge]
    assert any(1 in d for d in dims), f"{meta.name}: no tiny edge shape"
    assert any(any(v > 1 and v % 2 for v in d) for d in dims), f"{meta.name}: no odd-sized edge shape"
    if meta.kind == "cuda":
        load_task(path)  # raises TaskError listing every bad part
        _compile_cuda(path)
        return
    # run_correctness loads the task with load_task first: a bad part is refused there (ToolFailure).
    out = _correctness(path, ["micro", "edge"])
    assert out.passed, out.summary
    assert len(out.cases) == 1 + len(edge)
    if parts["DTYPE"] == "bfloat16":
        assert all(c.dtype == parts["CPU_DTYPE"] for c in out.cases), "the bf16 twin did not run"
    for alt in ALTERNATES.get(meta.name, []):
        out = _correctness(path, ALTERNATE_SHAPES.get(meta.name, ["micro"]), alt)
        assert out.passed, f"{alt}: {out.summary}"


def _compile_cuda(path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH: the CUDA task's source cannot be checked on this machine")

    tree = ast.parse(path.read_text())
    src = next(
        ast.literal_eval(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "CUDA_SOURCE"
    )
    name = next(
        ast.literal_eval(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "KERNEL_NAME"
    )
    work = Path(subprocess.check_output(["mktemp", "-d"], text=True).strip())
    try:
        (work / "k.cu").write_text(src)
        r = subprocess.run(
            ["nvcc", "-arch=sm_90a", "-ptx", "-DBLOCK_X=32", "-DBLOCK_Y=8", "k.cu", "-o", "k.ptx"],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert r.returncode == 0, r.stderr
        ptx = (work / "k.ptx").read_text()
        assert re.search(rf"\.entry {name}\(", ptx), f'no unmangled entry {name} (extern "C")'
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_tasks_dir_holds_only_suite_tasks_or_known_helpers() -> None:
    # A task file that does not follow the l<level>_ naming would silently drop out of the suite.
    stray = [p.name for p in TASKS_DIR.glob("*.py") if p not in TASKS and p.name != "add_1ms.py"]
    assert not stray, f"rename to l<level>_<name>.py or move: {stray}"
