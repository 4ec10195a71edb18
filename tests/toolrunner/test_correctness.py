"""run_correctness end to end on CPU (Triton's interpreter), through the real sandbox and task loader.

The task is examples/vector_add.py (fp32, tolerance 0: one IEEE add is bit-exact); the candidates in
tests/fixtures/tasks/ each get one thing wrong on purpose (their docstrings say what).
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from services.toolrunner.tasks import load_task
from services.toolrunner.tool import ToolFailure
from services.toolrunner.tools.run_correctness.spec import SPEC, resolve_cases, run
from shared.tools.run import RunCorrectnessInput, RunCorrectnessOutput

ROOT = Path(__file__).resolve().parents[2]
TASK = str(ROOT / "examples" / "vector_add.py")
FIX = ROOT / "tests" / "fixtures" / "tasks"


def _run(candidate: str | None = None, task: str = TASK, **kw: object) -> RunCorrectnessOutput:
    args = RunCorrectnessInput(task_path=task, candidate_path=str(FIX / candidate) if candidate else None,
                               device="cpu", **kw)  # type: ignore[arg-type]
    return run(args)


def test_task_against_itself_under_another_config_passes_every_shape_and_seed() -> None:
    out = _run(config={"BLOCK": 256, "num_warps": 2}, shapes=["micro", "edge"], seeds=[0, 1])
    assert out.passed, out.summary
    assert out.config == {"BLOCK": 256, "num_warps": 2, "num_stages": 1}
    assert out.device == "cpu (Triton interpreter)"
    assert out.candidate_status == "ok"
    # micro + 2 edge shapes (n = 1, 1000003) x 2 seeds
    assert [(c.shape_name, c.seed) for c in out.cases] == [
        ("micro", 0), ("micro", 1), ("edge:0", 0), ("edge:0", 1), ("edge:1", 0), ("edge:1", 1)]
    for case in out.cases:
        assert case.status == "pass"
        (o,) = case.outputs
        assert o.mismatches == 0 and o.max_abs_err == 0.0
        assert o.shape == [case.shape["n"]]
    assert out.summary == "6/6 cases pass"
    msgspec.json.decode(msgspec.json.encode(out), type=SPEC.output)  # the record round-trips


def test_off_by_one_mask_fails_exactly_at_the_last_element() -> None:
    out = _run("add_off_by_one.py", shapes=["micro", "edge:0"], seeds=[3])
    assert not out.passed
    micro, edge = out.cases
    assert micro.status == "fail"
    (o,) = micro.outputs
    assert o.mismatches == 1
    assert o.first_mismatches == [[4098]]  # n = 4099: the last index
    assert o.max_rel_err == 1.0  # the dropped element stays 0: |0 - r| / |r|
    assert edge.shape == {"n": 1} and edge.outputs[0].first_mismatches == [[0]]
    assert out.summary.startswith("0/2 cases pass; micro seed 3: output 0: 1/4099 mismatches")


def test_nan_candidate_reports_nan_counts() -> None:
    out = _run("add_nan.py", shapes=["micro"], seeds=[0])
    (case,) = out.cases
    (o,) = case.outputs
    assert case.status == "fail"
    assert o.nan_candidate == len(range(0, 4099, 7)) == 586
    assert o.nan_reference == 0
    assert o.mismatches == 586
    assert o.first_mismatches[:2] == [[0], [7]]


def test_crashing_candidate_is_a_failed_result_not_a_tool_failure() -> None:
    out = _run("add_crash.py", shapes=["micro"], seeds=[0, 1])
    assert not out.passed
    assert out.candidate_status == "crashed"
    assert out.candidate_message.startswith("crashed: worker crashed (SIGSEGV)")
    assert [c.status for c in out.cases] == ["fail", "fail"]
    assert out.cases[0].reason.startswith("candidate: process crashed")


def test_candidate_writing_into_its_inputs_is_flagged() -> None:
    out = _run("add_in_place.py", shapes=["micro"], seeds=[0])
    (case,) = out.cases
    assert case.status == "pass"  # the values are right ...
    assert case.candidate_modified_inputs  # ... but the verifier must know the inputs were overwritten
    assert "the candidate wrote into its inputs" in out.notes


def test_lower_precision_output_fails() -> None:
    out = _run("add_half_output.py", shapes=["micro"], seeds=[0])
    (case,) = out.cases
    assert case.status == "fail"
    assert case.reason == "output 0: dtype float16 != reference float32"


def test_candidate_whose_make_inputs_differs_is_an_error_not_a_pass_or_fail() -> None:
    out = _run("add_unseeded_inputs.py", shapes=["micro"], seeds=[0])
    (case,) = out.cases
    assert case.status == "error"
    assert "saw different inputs" in case.reason


def test_bf16_task_runs_its_float32_twin_on_cpu() -> None:
    out = _run(task=str(FIX / "add_bf16.py"), shapes=["micro"], seeds=[0])
    (case,) = out.cases
    assert case.status == "pass", case.reason
    assert case.dtype == "float32"
    assert case.shape == {"n": 4099, "dtype": "float32"}
    assert case.outputs[0].atol == 0.0  # the float32 tolerance applies to the float32 twin
    assert any("float32 twin" in n for n in out.notes)


def test_bf16_task_without_dtype_override_is_reported_not_checked() -> None:
    out = _run(task=str(FIX / "add_bf16_fixed_dtype.py"), shapes=["micro"], seeds=[0])
    (case,) = out.cases
    assert case.status == "not_checked"
    assert case.reason == "not checked on CPU: bf16 unsupported by the interpreter"
    assert not out.passed
    assert out.summary == "0/1 cases pass, 1 not checked"


def test_reference_that_raises_is_an_error_case() -> None:
    out = _run(task=str(FIX / "add_reference_raises.py"), shapes=["micro", "edge:0"], seeds=[0])
    assert [c.status for c in out.cases] == ["pass", "error"]
    assert out.cases[1].reason.startswith("reference: reference raised ValueError: reference cannot handle n=1")


def test_unknown_config_key_is_refused_with_the_known_keys() -> None:
    with pytest.raises(ToolFailure) as e:
        _run(config={"BLOKC": 64})
    assert e.value.code == "refused"
    assert "['BLOKC']" in e.value.message and "'BLOCK'" in e.value.message


def test_unknown_shape_name_is_refused_with_the_known_names() -> None:
    manifest = load_task(TASK)
    with pytest.raises(ToolFailure) as e:
        resolve_cases(manifest, ["tiny"], [0], cpu=True)
    assert e.value.code == "refused"
    assert "micro, full, edge:0, edge:1" in e.value.message


def test_asking_for_cuda_without_a_gpu_is_unavailable() -> None:
    if Path("/dev/nvidiactl").exists():
        pytest.skip("a GPU driver is present")
    with pytest.raises(ToolFailure) as e:
        run(RunCorrectnessInput(task_path=TASK, device="cuda"))
    assert e.value.code == "unavailable"


@pytest.mark.gpu
def test_on_the_gpu_the_example_task_passes_against_itself() -> None:
    out = run(RunCorrectnessInput(task_path=TASK, config={"BLOCK": 1024}, shapes=["micro", "edge"],
                                  seeds=[0, 1], device="cuda"))
    if dest := os.environ.get("KPILOT_FIXTURE_OUT"):
        Path(dest, "run_correctness_vector_add_gpu.json").write_bytes(msgspec.json.encode(out))
    assert out.device.startswith("cuda:")
    assert out.passed, out.summary


def test_outputs_rewritten_after_they_were_saved_fail() -> None:
    """A thread of the candidate rewrites the saved .npy files with the right values before the process
    ends: the worker hashed what it saved, so the rewrite is found (the old runner hashed the files only
    after the process ended, and passed the case)."""
    out = _run("add_rewrites_saved_files.py", shapes=["micro"], seeds=[0, 1, 2])
    assert not out.passed
    assert any("rewritten after the worker saved it" in c.reason for c in out.cases), [c.reason for c in out.cases]


def test_an_exit_hook_of_the_candidate_does_not_run_before_the_comparison() -> None:
    """tests/verifier/cheats/atexit_rewrite.py rewrites the saved outputs with x + y at process exit; the
    worker ends with os._exit once its result is written, so the hook never runs and the unwritten
    outputs are compared as they are."""
    args = RunCorrectnessInput(task_path=TASK, device="cpu", shapes=["micro"], seeds=[0],
                               candidate_path=str(ROOT / "tests" / "verifier" / "cheats" / "atexit_rewrite.py"))
    out = run(args)
    assert not out.passed and out.cases[0].status == "fail", out.summary
