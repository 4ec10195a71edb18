"""The anti-gaming corpus (tests/verifier/cheats/): every cheating candidate is stopped at the right layer
for the right reason, and honest candidates (config changes) pass every layer this machine can run.

Each cheat file's docstring says its trick and the expected verdict; the table below is the same
expectation in code. CPU tests run the real funnel through the in-process tool client (real tools, real
sandboxed subprocesses, Triton's interpreter); GPU-only tricks carry @pytest.mark.gpu.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import msgspec
import pytest

from services.toolrunner.registry import local_executor
from services.verifier.funnel import VerifyJob, verify
from shared.messages import Verdict
from shared.toolclient import InProcessToolClient

ROOT = Path(__file__).resolve().parents[2]
CHEATS = ROOT / "tests" / "verifier" / "cheats"
EXAMPLES = ROOT / "examples"

# cheat file -> (example task, layer that must stop it, any of these must appear in one reason)
CPU_CHEATS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "zeros_output": ("vector_add", "micro", ("wrong output",)),
    "constant_output": ("vector_add", "micro", ("wrong output",)),
    "return_input": ("vector_add", "micro", ("wrong output",)),
    "uninitialised_output": ("vector_add", "micro", ("wrong output",)),
    "reuse_reference_buffer": ("vector_add", "micro", ("wrong output",)),
    "pointer_cache": ("vector_add", "micro", ("wrong output", "output_ignores_input")),
    "skip_repeated": ("vector_add", "micro", ("wrong output",)),
    "background_thread": ("vector_add", "micro", ("wrong output", "background_thread", "late_write")),
    "timer_patch": ("vector_add", "micro", ("monkey_patch: replaced torch.cuda.Event.elapsed_time",)),
    "torch_patch": ("vector_add", "micro", ("monkey_patch: replaced torch.cuda.synchronize",)),
    "caller_frame": ("vector_add", "micro", ("frame_inspection: sys._getframe",)),
    "gc_scan": ("vector_add", "micro", ("gc_inspection: gc.get_objects",)),
    "writes_inputs": ("vector_add", "micro", ("writes into its inputs",)),
    "lazy_subclass": ("vector_add", "micro", ("tensor_subclass",)),
    "calls_reference": (
        "vector_add",
        "micro",
        ("calls_reference: launch ran the reference's torch ops aten.add",),
    ),
    "torch_fallback": ("vector_add", "micro", ("no_kernel_launch", "calls_reference")),
    "hardcoded_shape": ("vector_add", "micro", ("wrong output on edge:",)),
    # No Triton kernel at all (as LLM-written candidates do it): the reason names what launch returned.
    "empty_no_kernel": ("vector_add", "static", (("launch ran no Triton kernel, so there is nothing to compile: "
                                                 "empty/uninitialised output"),)),
    "zeros_no_kernel": ("vector_add", "static", ("constant output: every element is 0 whatever the input",)),
    "reference_no_kernel": ("vector_add", "static", (("reference called: launch computes its output with the "
                                                     "reference's own torch ops (aten.add)"),)),
    "precision_fp16": ("vector_add", "static", ("precision downgrade",)),
    "matmul_fp16_accumulate": (
        "matmul",
        "static",
        ("precision downgrade: the dot accumulates in HMMA.16816.F16",),
    ),
    "atomic_output": ("vector_add", "static", ("needs human review: 1 new atomic",)),
    "transpose_no_barrier": (
        "transpose_cuda",
        "static",
        (("needs human review: shared memory written and read with no barrier"),),
    ),
    "transpose_divergent_barrier": (
        "transpose_cuda",
        "static",
        (("needs human review: 1 barrier(s) in divergent code"),),
    ),
    # State a launch keeps between calls (a memo by content, a call counter): wrong in production on any
    # inputs that hit the key, and a timing loop times the lookup.
    "content_key_cache": ("vector_add", "micro", ("stateful_launch: launch changed module state",)),
    "call_counter": ("vector_add", "micro", ("stateful_launch: launch changed module state",)),
    # Telling the checks from the benchmark (the behaviour watched is honest): the source says so.
    "harness_sniff": ("vector_add", "micro", ("source: imports sys",)),
    "interpreter_sniff": ("vector_add", "micro", ("source: imports os",)),
    "graph_capture_sniff": ("vector_add", "micro", ("source: uses .is_current_stream_capturing",)),
    # run_correctness compares the files its worker saved, which the candidate's exit hook rewrote (it
    # passes); the honesty probe sees the unwritten output move, and the memo of inputs it keeps.
    "atexit_rewrite": ("vector_add", "micro", ("wrong output", "late_write", "stateful_launch",
                                                "source: imports atexit")),
    # The candidate file's harness is what the full layer benchmarks: it must be the task's.
    "shrunk_full_shape": ("vector_add", "static", ("harness changed: SHAPES",)),
    "make_inputs_full_shape": ("vector_add", "static", ("harness changed: make_inputs",)),
    "disguised_torch_ops": ("vector_add", "micro", ("torch_output: output 0 was computed by torch ops",)),
}
GPU_CHEATS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "side_stream": ("vector_add", "micro", ("side_stream", "late_write", "wrong output")),
    "side_stream_fast": ("vector_add", "micro", ("cheat: side_stream",)),
    "benchmark_shape_cache": ("vector_add", "full", ("impossible speedup",)),
    "uninitialised_output": ("vector_add", "micro", ("wrong output",)),
}
HONEST: list[tuple[str, str | None, dict[str, int]]] = [
    ("vector_add", "honest_block1024", {"BLOCK": 1024}),
    ("vector_add", None, {"BLOCK": 2048, "num_warps": 8}),
    ("row_softmax", None, {"BLOCK_N": 1024, "num_warps": 8}),
]


Run = tuple[str, str | None, tuple[tuple[str, int], ...]]  # task, candidate, config items


async def _funnel(task: str, candidate: str | None, config: dict[str, int] | None = None) -> list[Verdict]:
    job = VerifyJob(
        candidate_id=candidate or task,
        task_path=str(EXAMPLES / f"{task}.py"),
        candidate_path=str(CHEATS / f"{candidate}.py") if candidate else None,
        config=config or {},
    )
    verdicts = await verify(job, InProcessToolClient(local_executor(), source="test"))
    if out := os.environ.get("KPILOT_FIXTURE_OUT"):
        path = Path(out) / "verifier" / f"{candidate or task}.verdicts.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(msgspec.to_builtins(verdicts), indent=1))
    return verdicts


def run_funnel(task: str, candidate: str | None, config: dict[str, int] | None = None) -> list[Verdict]:
    return asyncio.run(_funnel(task, candidate, config))


def _run_of(item: pytest.Item) -> Run | None:
    """The funnel run a selected CPU test of this module needs (None: not one of them)."""
    params = getattr(item, "callspec", None)
    if params is None or item.get_closest_marker("gpu") or item.module is not sys.modules[__name__]:
        return None
    p = params.params
    if "name" in p:
        return CPU_CHEATS[p["name"]][0], p["name"], ()
    return p["task"], p["candidate"], tuple(sorted(p["config"].items()))


@pytest.fixture(scope="module")
def funnel_runs(request: pytest.FixtureRequest) -> dict[Run, list[Verdict] | BaseException]:
    """The verdicts of every funnel run the selected tests of this module need, computed at once, two at
    a time: one run keeps about one of this machine's two cores busy (its sandboxed workers run one after
    another), and the runs are independent (each its own candidate file, the in-process executor's
    reference cache is locked), so the module takes about half the time of one run after another. A run
    that raised is kept as its exception, for its own test to raise."""
    wanted = list(dict.fromkeys(r for item in request.session.items if (r := _run_of(item)) is not None))

    async def _all() -> list[list[Verdict] | BaseException]:
        slots = asyncio.Semaphore(2)

        async def one(run: Run) -> list[Verdict]:
            async with slots:
                return await _funnel(run[0], run[1], dict(run[2]) or None)

        return await asyncio.gather(*(one(r) for r in wanted), return_exceptions=True)

    return dict(zip(wanted, asyncio.run(_all()), strict=True))


def _verdicts(runs: dict[Run, list[Verdict] | BaseException], run: Run) -> list[Verdict]:
    got = runs[run]
    if isinstance(got, BaseException):
        raise got
    return got


def assert_stopped(verdicts: list[Verdict], layer: str, markers: tuple[str, ...]) -> None:
    last = verdicts[-1]
    summary = [(v.layer, v.status, v.reasons) for v in verdicts]
    assert (last.layer, last.status) == (layer, "fail"), summary
    assert all(v.status == "pass" for v in verdicts[:-1]), summary
    assert any(m in r for r in last.reasons for m in markers), summary
    assert last.provenance.method, "every verdict carries its method"


def test_the_corpus_has_a_file_per_trick_and_every_file_an_expectation() -> None:
    files = {p.stem for p in CHEATS.glob("*.py")} - {"honest_block1024"}
    assert files == set(CPU_CHEATS) | set(GPU_CHEATS)
    assert len(files) >= 15
    for name in files:
        doc = (CHEATS / f"{name}.py").read_text().split('"""')[1]
        assert "Expected: " in doc, f"{name}.py: its docstring must say the expected verdict"


@pytest.mark.parametrize("name", sorted(CPU_CHEATS))
def test_cheat_is_stopped_at_the_right_layer_for_the_right_reason(
        name: str, funnel_runs: dict[Run, list[Verdict] | BaseException]) -> None:
    task, layer, markers = CPU_CHEATS[name]
    verdicts = _verdicts(funnel_runs, (task, name, ()))
    assert_stopped(verdicts, layer, markers)
    if layer == "static" and "needs human review" in markers[0]:
        assert verdicts[-1].needs_review and verdicts[-1].annotations, "a hazard quotes its SASS lines"


@pytest.mark.parametrize(("task", "candidate", "config"), HONEST)
def test_honest_config_changes_pass_every_layer_the_cpu_can_run(
    task: str, candidate: str | None, config: dict[str, int],
    funnel_runs: dict[Run, list[Verdict] | BaseException]
) -> None:
    verdicts = _verdicts(funnel_runs, (task, candidate, tuple(sorted(config.items()))))
    assert [(v.layer, v.status) for v in verdicts] == [
        ("static", "pass"),
        ("micro", "pass"),
        ("full", "skipped"),
    ], [v.reasons for v in verdicts]
    full = verdicts[-1]
    assert full.reasons == ["not measured: no GPU"]
    assert [m.not_measured for m in full.measurements] == ["no GPU"]
    micro = verdicts[1]
    assert "timing stability not measured: no GPU" in micro.reasons
    assert micro.config == config


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GPU_CHEATS))
def test_gpu_cheat_is_stopped_at_the_right_layer(name: str) -> None:
    task, layer, markers = GPU_CHEATS[name]
    assert_stopped(run_funnel(task, name), layer, markers)


@pytest.mark.gpu
@pytest.mark.parametrize(("task", "candidate", "config"), HONEST)
def test_honest_candidates_reach_the_full_layer_on_the_gpu(
    task: str, candidate: str | None, config: dict[str, int]
) -> None:
    verdicts = run_funnel(task, candidate, config)
    assert [v.layer for v in verdicts] == ["static", "micro", "full"], [v.reasons for v in verdicts]
    assert verdicts[1].status == "pass", verdicts[1].reasons
    full = verdicts[2]
    # An honest config may or may not be faster; it must never be called impossible, and a gain is
    # accepted only with its CI above 1 + min_gain.
    assert not any("impossible" in r for r in full.reasons), full.reasons
    speedup = next(m for m in full.measurements if m.name == "speedup")
    assert speedup.value is not None and speedup.low is not None and full.gpu_seconds > 0
    assert full.provenance.device != "none"
