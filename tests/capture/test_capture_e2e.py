"""`kpilot capture` end to end on CPU: an unmodified plain Triton program (tests/capture/softmax_program.py,
host wrappers computing BLOCK_SIZE from the row width, an in-place kernel with a grid lambda) runs under
the capture hook in Triton's interpreter; the written tasks load, pass interpreter correctness against the
captured reference (also at a config the program never used), and `kpilot optimize` runs a job on one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.toolrunner.tasks import load_task
from services.toolrunner.tools.run_correctness.spec import run as run_correctness
from shared.natsserver import free_port
from shared.tools.run import RunCorrectnessInput

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "capture" / "softmax_program.py"


def _kpilot(*args: str, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.kpilot", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL, env=env)


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("capture")
    env = os.environ | {"TRITON_INTERPRET": "1"}
    res = _kpilot("capture", "--out", str(out), "--top", "2", "--", sys.executable, str(PROGRAM),
                  timeout=300, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "ok" in res.stdout  # the program itself ran to its end, its own assertion included
    return out


def test_capture_json_ranks_both_kernels_and_names_their_origin(captured: Path) -> None:
    rep = json.loads((captured / "capture.json").read_text())
    assert rep["timing"] == "not measured: Triton interpreter"
    by_name = {k["kernel"]: k for k in rep["kernels"]}
    assert set(by_name) == {"softmax_kernel", "scale_"}  # the jit helper _row_max is not a launch
    soft, scale = by_name["softmax_kernel"], by_name["scale_"]
    assert soft["calls"] == 3 and scale["calls"] == 1
    # calls * elements: 3 * (2 * 37 * 100) against 1 * 1000
    assert soft["share"] == pytest.approx(22200 / 23200) and soft["share_of"] == "calls * elements"
    assert soft["origin"] == f"{PROGRAM}:13" and scale["origin"] == f"{PROGRAM}:24"
    assert all(Path(k["task"]).is_file() for k in rep["kernels"])


def test_tasks_carry_the_observed_config_helpers_and_grid(captured: Path) -> None:
    m = load_task(str(captured / "softmax_kernel_task.py"))
    assert m.kernels[0].name == "softmax_kernel"
    # the host heuristic next_power_of_2(100) and the num_warps rule, frozen as observed
    assert m.config == {"BLOCK_SIZE": 128, "num_warps": 4, "num_stages": 3}
    # one block spans a row (grid = rows): no smaller block, which would drop columns (the test below)
    assert m.space["BLOCK_SIZE"] == [128, 256]
    text = (captured / "softmax_kernel_task.py").read_text()
    assert "def _row_max(x):" in text and "def _ref__row_max(x):" in text
    s = load_task(str(captured / "scale__task.py"))
    assert s.config["BLOCK"] == 256
    # the grid lambda cdiv(n, BLOCK) became a formula of the tuned block
    assert "triton.cdiv(1000, config['BLOCK'])" in (captured / "scale__task.py").read_text()


@pytest.mark.parametrize(("task", "config"), [
    ("softmax_kernel_task.py", {}),
    ("softmax_kernel_task.py", {"BLOCK_SIZE": 256, "num_warps": 2}),
    ("scale__task.py", {"BLOCK": 64}),  # needs the grid formula: 16 programs, not the captured 4
])
def test_tasks_pass_interpreter_correctness_against_the_captured_reference(
    captured: Path, task: str, config: dict
) -> None:
    out = run_correctness(RunCorrectnessInput(task_path=str(captured / task), config=config, device="cpu",
                                              shapes=["micro"], seeds=[0, 1]))
    assert out.passed, out.summary
    assert out.device.startswith("cpu")


def test_a_block_too_small_for_the_row_fails_correctness(captured: Path) -> None:
    # softmax_kernel covers a row in one block: 64 < 100 columns must be caught, not passed.
    out = run_correctness(RunCorrectnessInput(task_path=str(captured / "softmax_kernel_task.py"),
                                              config={"BLOCK_SIZE": 64}, device="cpu", shapes=["micro"],
                                              seeds=[0]))
    assert not out.passed


@pytest.fixture(scope="module")
def stack(captured: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    port, state = free_port(), str(tmp_path_factory.mktemp("stack") / "state")
    env = os.environ | {"KPILOT_TASK_ROOTS": str(captured)}
    env.pop("TRITON_INTERPRET", None)
    up = _kpilot("up", "--detach", "--port", str(port), "--state-dir", state, timeout=200, env=env)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        yield f"nats://127.0.0.1:{port}", env
    finally:
        _kpilot("down", "--port", str(port), "--state-dir", state, timeout=60, env=env)


@pytest.mark.slow
def test_kpilot_optimize_runs_a_job_on_a_captured_task(captured: Path, stack: tuple[str, dict[str, str]]) -> None:
    url, env = stack
    out = _kpilot("optimize", str(captured / "scale__task.py"), "--budget", "120", "--max-candidates", "2",
                  "--patch-wait", "30", "--nats", url, timeout=600, env=env)
    text = out.stdout + out.stderr
    assert out.returncode == 3, text  # no GPU here: at best a proposed patch, never a verified one
    assert re.search(r"job (job-\w+) requested", out.stdout), text
    assert "job opened for scale_ " in out.stdout, text  # KERNELS[0], the captured kernel
    assert "v1 queued" in out.stdout, text


@pytest.mark.slow
def test_kpilot_optimize_accepts_a_kernelbench_file(stack: tuple[str, dict[str, str]]) -> None:
    url, env = stack
    out = _kpilot("optimize", str(ROOT / "examples" / "kernelbench_relu.py"), "--budget", "60",
                  "--patch-wait", "10", "--nats", url, timeout=400, env=env)
    text = out.stdout + out.stderr
    assert "CONFIG must be a literal dict" not in text
    assert "job opened for relu_kernel" in out.stdout, text  # no CONFIG to tune: the rules policy stops
    assert out.returncode == 3, text


def test_an_in_place_call_keeps_its_aliasing_and_passes_at_a_new_block(tmp_path: Path) -> None:
    env = os.environ | {"TRITON_INTERPRET": "1"}
    res = _kpilot("capture", "--out", str(tmp_path), "--", sys.executable,
                  str(ROOT / "tests" / "capture" / "axpy_program.py"), timeout=300, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    task = tmp_path / "axpy_task.py"
    assert "'alias_of': 'y_ptr'" in task.read_text() and "_WRITTEN = [1]" in task.read_text()
    assert "INPLACE = (1,)" in task.read_text()  # y is written in place, restored by the tools, not cloned
    out = run_correctness(RunCorrectnessInput(task_path=str(task), config={"BLOCK": 128}, device="cpu",
                                              shapes=["micro"], seeds=[0, 1]))
    assert out.passed, out.summary
    assert not any(c.candidate_modified_inputs for c in out.cases)
    # Not vacuous: the reference's expected y is 2x + y (a clone of y that is not the kernel's output
    # would compare the unchanged y on both sides), and launch leaves exactly that in inputs[1].
    probe = (f"import importlib.util, torch; s = importlib.util.spec_from_file_location('t', {str(task)!r}); "
             "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); "
             "i = m.make_inputs(m.SHAPES['micro'], 0, 'cpu'); x, y = i[0].clone(), i[1].clone(); "
             "r = m.reference(i); assert torch.allclose(r, 2 * x + y) and torch.equal(i[1], y), 'reference'; "
             "m.launch(i, **m.CONFIG); assert torch.allclose(i[1], 2 * x + y), 'launch'; print('ok')")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env,
                         check=False)
    assert res.stdout.strip() == "ok", res.stdout + res.stderr


def test_a_config_candidate_of_a_captured_task_keeps_the_tasks_harness(captured: Path) -> None:
    # H200 run r43: every candidate of two captured liger/fla kernels failed static with "harness
    # changed: CONFIG": the reference's config was `dict(CONFIG)`, so it followed the candidate's CONFIG.
    from services.verifier.source_checks import harness_changes

    task = (captured / "scale__task.py").read_text()
    line = next(ln for ln in task.splitlines() if ln.startswith("CONFIG = "))
    candidate = task.replace(line, "CONFIG = {'BLOCK': 512, 'num_warps': 8, 'num_stages': 2}")
    assert candidate != task
    assert harness_changes(candidate, task) == []
