"""Kernel task loading: every example loads with the parts it declares; broken tasks are refused with
every problem named; the task is never imported in the calling process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from services.toolrunner.sandbox import Limits
from services.toolrunner.tasks import TaskError, load_task, load_task_cached
from shared.tools.task import TaskManifest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXAMPLE_NAMES = ["vector_add", "row_softmax", "matmul", "attention_fwd", "transpose_cuda", "kernelbench_relu"]


@pytest.fixture(scope="module")
def manifests() -> dict[str, TaskManifest]:
    return {name: load_task_cached(EXAMPLES / f"{name}.py") for name in EXAMPLE_NAMES}


def test_examples_load(manifests: dict[str, TaskManifest]) -> None:
    kinds = {n: m.kind for n, m in manifests.items()}
    assert kinds == {
        "vector_add": "triton",
        "row_softmax": "triton",
        "matmul": "triton",
        "attention_fwd": "triton",
        "transpose_cuda": "cuda",
        "kernelbench_relu": "kernelbench",
    }
    for m in manifests.values():
        assert len(m.sha256) == 64 and m.path.endswith(".py")
        assert m.kernels, m.name


def test_matmul_manifest_is_the_untuned_start(manifests: dict[str, TaskManifest]) -> None:
    m = manifests["matmul"]
    assert m.primary == "matmul_kernel"
    # GPU.md's 89 TFLOP/s reference point.
    assert m.config == {
        "BLOCK_M": 32,
        "BLOCK_N": 32,
        "BLOCK_K": 32,
        "GROUP_M": 1,
        "num_warps": 4,
        "num_stages": 1,
    }
    assert m.shapes.full == {"m": 8192, "n": 8192, "k": 8192}
    assert m.dtype == "bfloat16" and m.cpu_dtype == "float16"
    assert set(m.tolerance) == {"bfloat16", "float16"}
    full = next(c for c in m.costs if c.shape_name == "full")
    assert full.flops == 2.0 * 8192**3
    assert full.bytes_moved == 2.0 * 3 * 8192**2
    assert [c.shape_name for c in m.costs] == ["micro", "full", "edge:0", "edge:1"]
    assert m.shape("edge:1") == {"m": 3, "n": 200, "k": 300}
    with pytest.raises(KeyError, match="edge:2"):
        m.shape("edge:2")
    assert m.kernels[0].constexprs == ["BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"]


def test_cuda_and_kernelbench_manifests(manifests: dict[str, TaskManifest]) -> None:
    t = manifests["transpose_cuda"]
    assert t.kernel_names() == ["transpose_naive"] and len(t.cuda_source_sha256) == 64
    assert t.cuda_source_line == 12  # examples/transpose_cuda.py opens CUDA_SOURCE on line 12
    assert t.config == {"BLOCK_X": 32, "BLOCK_Y": 8}
    kb = manifests["kernelbench_relu"]
    assert kb.has_candidate and kb.kernel_names() == ["relu_kernel"]
    assert kb.tolerance["float32"].atol == 1e-2 and kb.costs == [] and kb.notes


def test_loading_does_not_import_the_task_here() -> None:
    before = {m for m in sys.modules if m.startswith("kpilot_task_")}  # other tests may import tasks
    load_task(EXAMPLES / "vector_add.py")
    assert {m for m in sys.modules if m.startswith("kpilot_task_")} == before


def _write(tmp_path: Path, name: str, body: str) -> Path:
    p = tmp_path / f"{name}.py"
    p.write_text(textwrap.dedent(body))
    return p


_GOOD = """
    import torch, triton, triton.language as tl

    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        pass

    KERNELS = (k,)
    CONFIG = {"BLOCK": 128, "num_warps": 4, "num_stages": 1}
    SPACE = {"BLOCK": [128, 256], "num_warps": [4, 8]}
    SHAPES = {"micro": {"n": 10}, "full": {"n": 1000}, "edge": [{"n": 1}]}
    DTYPE = "float32"
    TOLERANCE = {"float32": [0.0, 0.0]}
    PRECISION = "exact"
    def make_inputs(shape, seed, device): return (torch.zeros(shape["n"]),)
    def launch(inputs, **config): return inputs[0]
    def reference(inputs): return inputs[0]
    def flops(shape): return 1.0
    def bytes_moved(shape): return 8.0 * shape["n"]
"""


def test_the_run_tools_share_one_load_per_file_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every tool that checks a request against a task reads its manifest through load_for_tool, the
    content-keyed cache: one sandboxed import per file version, and an edited file is imported again."""
    from services.toolrunner import tasks
    from services.toolrunner.tool import ToolFailure
    from services.toolrunner.tools.autotune import spec as autotune
    from services.toolrunner.tools.bench import spec as bench
    from services.toolrunner.tools.bench_ab import spec as bench_ab
    from services.toolrunner.tools.compile import spec as compile
    from services.toolrunner.tools.honesty_probe import spec as honesty
    from services.toolrunner.tools.mem_access_profile import spec as mem_access
    from services.toolrunner.tools.ncu_profile import spec as ncu_profile
    from services.toolrunner.tools.run_correctness import spec as correctness
    from services.toolrunner.tools.sanitize import spec as sanitize

    for tool in (autotune, bench, bench_ab, compile, correctness, honesty, mem_access, ncu_profile, sanitize):
        assert tool.load_for_tool is tasks.load_for_tool, tool.__name__
    loads: list[str] = []
    real = tasks.load_task

    def counting(path: str | Path, *a: object, **kw: object) -> TaskManifest:
        loads.append(str(path))
        return real(path, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(tasks, "load_task", counting)
    path = _write(tmp_path, "shared", _GOOD)
    first = tasks.load_for_tool(str(path), "task")
    assert tasks.load_for_tool(str(path), "candidate") == first and tasks.load_for_tool(str(path)) == first
    assert len(loads) == 1, loads
    path.write_text(path.read_text().replace('"BLOCK": 128,', '"BLOCK": 256,'))
    assert tasks.load_for_tool(str(path)).config["BLOCK"] == 256 and len(loads) == 2, loads
    with pytest.raises(ToolFailure) as e:
        tasks.load_for_tool(str(tmp_path / "missing.py"), "candidate")
    assert e.value.code == "refused" and str(e.value).startswith("candidate: task ")


def _problems(path: Path, limits: Limits | None = None) -> list[str]:
    with pytest.raises(TaskError) as info:
        load_task(path) if limits is None else load_task(path, limits)
    assert str(path.resolve()) in str(info.value)
    return info.value.problems


def test_minimal_task_loads(tmp_path: Path) -> None:
    m = load_task(_write(tmp_path, "good", _GOOD))
    assert m.kind == "triton" and m.primary == "k" and m.kernels[0].params == ["x_ptr", "n", "BLOCK"]


def test_missing_parts_are_all_listed(tmp_path: Path) -> None:
    body = _GOOD.split("SHAPES =")[0]  # keep kernels, CONFIG, SPACE; drop everything after
    problems = _problems(_write(tmp_path, "missing", body))
    text = "\n".join(problems)
    for part in (
        "SHAPES",
        "DTYPE",
        "TOLERANCE",
        "PRECISION",
        "make_inputs",
        "launch",
        "reference",
        "flops",
        "bytes_moved",
    ):
        assert f"{part}: missing; expected: " in text, part
    assert len(problems) == 9


# Groups of breakages that do not mask each other, so one load checks many parts (each load is a ~2 s
# sandboxed import of torch and triton).
_BROKEN = {
    "parts": [
        (
            ('"BLOCK": 128, "num_warps"', '"BLOCK": 64, "num_warps"'),
            "SPACE: CONFIG['BLOCK'] = 64 is not among",
        ),
        (
            ('CONFIG = {"BLOCK": 64,', 'CONFIG = {"TILE": 1, "BLOCK": 64,'),
            "CONFIG: keys ['TILE'] are neither",
        ),
        (('SPACE = {"BLOCK"', 'SPACE = {"BLOK": [1], "BLOCK"'), "SPACE: keys ['BLOK'] are not in CONFIG"),
        (
            ('"num_warps": 4, "num_stages"', '"num_warps": 3, "num_stages"'),
            "num_warps must be a power of two",
        ),
        (('"num_warps": [4, 8]', '"num_warps": [3, 8]'), ""),  # keep 3 in SPACE: one problem, not two
        (('DTYPE = "float32"', 'DTYPE = "float64"'), "DTYPE: 'float64' is not supported"),
        (("[0.0, 0.0]", "[0.0]"), "TOLERANCE: 'float32': [0.0] is not [atol, rtol]"),
        (('PRECISION = "exact"', 'PRECISION = "fast"'), "PRECISION: 'fast' is not supported"),
        (
            ("def flops(shape): return 1.0", "def flops(shape): return 1 / 0"),
            "flops: raised ZeroDivisionError",
        ),
        (('return 8.0 * shape["n"]', "return -1.0"), "bytes_moved: returned -1.0"),
        (
            ("def launch(inputs, **config)", "def launch(inputs)"),
            "launch: does not take 1 positional argument and every CONFIG key",
        ),
        (("def reference(inputs)", "def reference()"), "reference: does not take 1 positional argument"),
    ],
    "shapes": [
        ((', "edge": [{"n": 1}]', ""), 'SHAPES: "edge" must be a non-empty list'),
        (('"full": {"n": 1000}', '"full": {"n": 1.5}'), 'SHAPES: "full": values must be ints'),
    ],
    "kernel_not_jit": [(("KERNELS = (k,)", "KERNELS = (print,)"), "KERNELS: item 0 is builtin_function")],
    "kernels_list": [(("KERNELS = (k,)", "KERNELS = [k]"), "KERNELS: not a non-empty tuple")],
}


@pytest.mark.parametrize("group", sorted(_BROKEN))
def test_wrong_parts_are_named_with_their_expected_form(tmp_path: Path, group: str) -> None:
    body = _GOOD
    for old, new in (change for change, _ in _BROKEN[group]):
        assert old in body, old
        body = body.replace(old, new)
    problems = _problems(_write(tmp_path, group, body))
    needles = [needle for _, needle in _BROKEN[group] if needle]
    for needle in needles:
        hit = [p for p in problems if needle in p]
        assert hit, (needle, problems)
        assert "; expected: " in hit[0]
    assert len(problems) == len(needles), problems


def test_constraint_rejecting_the_start_is_refused(tmp_path: Path) -> None:
    body = _GOOD + "    def constraint(config, shape): return config['BLOCK'] >= 256\n"
    problems = _problems(_write(tmp_path, "constrained", body))
    assert any("constraint: rejects the starting CONFIG on the micro shape" in p for p in problems)


def test_import_error_names_the_line(tmp_path: Path) -> None:
    problems = _problems(_write(tmp_path, "raises", "x = 1\nraise RuntimeError('boom')\n"))
    assert len(problems) == 1 and "RuntimeError: boom" in problems[0] and "line 2" in problems[0]


def test_not_a_task(tmp_path: Path) -> None:
    problems = _problems(_write(tmp_path, "plain", "x = 1\n"))
    assert "define KERNELS (Triton), CUDA_SOURCE + KERNEL_NAME" in problems[0]


def test_missing_file_and_wrong_suffix(tmp_path: Path) -> None:
    assert "no such file" in _problems(tmp_path / "nope.py")[0]
    txt = tmp_path / "task.txt"
    txt.write_text("x = 1")
    assert "not a .py file" in _problems(txt)[0]


def test_cuda_kernel_name_must_be_in_source(tmp_path: Path) -> None:
    cuda = 'KERNEL_NAME = "other"\n    CUDA_SOURCE = "extern \\"C\\" __global__ void mine(float* x) {}"'
    body = (
        _GOOD.replace("KERNELS = (k,)", cuda)
        .replace(', "num_warps": 4, "num_stages": 1', "")
        .replace(', "num_warps": [4, 8]', "")
    )
    problems = _problems(_write(tmp_path, "cuda", body))
    assert any("KERNEL_NAME: no __global__ function 'other' in CUDA_SOURCE" in p for p in problems), problems


def test_kernelbench_without_model_module(tmp_path: Path) -> None:
    body = "class Model:\n    pass\ndef get_inputs(): return []\n"
    problems = _problems(_write(tmp_path, "kb", body))
    assert any(p.startswith("Model: not a torch.nn.Module subclass") for p in problems)
    assert any(p.startswith("get_init_inputs: missing") for p in problems)


def test_hanging_import_times_out(tmp_path: Path) -> None:
    path = _write(tmp_path, "hang", "import time\ntime.sleep(60)\n")
    problems = _problems(path, Limits(timeout_s=3.0))
    assert len(problems) == 1 and "loading the task timeout: timed out after" in problems[0]


# The examples must be correct: run each Triton example's micro and edge shapes in Triton's CPU
# interpreter (bf16 tasks on their CPU_DTYPE twin) against its reference, in one child process.
_INTERPRET = """
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch
from services.toolrunner.task_runtime import import_task, runtime_for
out = {}
for path in sys.argv[1:]:
    m = import_task(path); rt = runtime_for(m)
    cpu = getattr(m, "CPU_DTYPE", getattr(m, "DTYPE", "float32"))
    atol, rtol = m.TOLERANCE[cpu] if hasattr(m, "TOLERANCE") else (1e-2, 1e-2)
    shapes = [m.SHAPES["micro"], *m.SHAPES["edge"]] if hasattr(m, "SHAPES") else [{}]
    res = []
    for i, shape in enumerate(shapes):
        inputs = rt.make_inputs({**shape, "dtype": cpu}, i, "cpu")
        got, want = rt.launch(inputs, **getattr(m, "CONFIG", {})), rt.reference(inputs)
        res.append(bool(torch.allclose(got.float(), want.float(), atol=atol, rtol=rtol))
                   and got.dtype == getattr(torch, cpu))
    out[os.path.basename(path)] = res
print(json.dumps(out))
"""


def test_triton_examples_are_correct_in_the_interpreter() -> None:
    files = [str(EXAMPLES / f"{n}.py") for n in EXAMPLE_NAMES if n != "transpose_cuda"]
    proc = subprocess.run(
        [sys.executable, "-c", _INTERPRET, *files],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results == {
        "vector_add.py": [True] * 3,
        "row_softmax.py": [True] * 3,
        "matmul.py": [True] * 3,
        "attention_fwd.py": [True] * 3,
        "kernelbench_relu.py": [True],
    }
