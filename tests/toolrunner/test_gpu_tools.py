"""GPU tools on the example tasks, on a real GPU (the lead runs these on the H200: `pytest -m gpu`).

Each test checks the record against its JSON Schema (msgspec.json.schema + jsonschema) and a few facts
that must hold on any H200. With $KPILOT_FIXTURE_OUT set, every record (and the raw ncu CSV, the
.ncu-rep and the raw compute-sanitizer text) is saved there, for committing as CPU-test fixtures.
Budget: each test stays well under 2 minutes on an H200.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import jsonschema
import msgspec
import pytest

from services.toolrunner.nvtools import find_tool, gpu_count
from services.toolrunner.sandbox import Limits, run_worker
from services.toolrunner.tools.autotune import spec as autotune
from services.toolrunner.tools.bench import spec as bench
from services.toolrunner.tools.bench_ab import spec as bench_ab
from services.toolrunner.tools.ncu_profile import spec as ncu_profile
from services.toolrunner.tools.sanitize import spec as sanitize
from services.toolrunner.tools.sanitize.worker import SanitizeWorkerRequest, SanitizeWorkerResult
from services.toolrunner.worker_lib.launch_task import LaunchTaskRequest
from shared.parsers.sanitizer import parse_sanitizer_output
from shared.tools.bench import (
    AutotuneInput,
    AutotuneOutput,
    BenchABInput,
    BenchABOutput,
    BenchInput,
    BenchOutput,
    BenchSubject,
)
from shared.tools.profile import NcuProfileInput, NcuProfileOutput, SanitizeInput, SanitizeOutput

ROOT = Path(__file__).resolve().parents[2]
VECTOR_ADD = str(ROOT / "examples" / "vector_add.py")
MATMUL = str(ROOT / "examples" / "matmul.py")
WILD_READ = str(ROOT / "tests" / "fixtures" / "tasks" / "add_wild_read.py")
# A matmul config that cannot run on Hopper at shape edge:0 (see test_autotune_keeps_failed_configs).
TOO_BIG_MATMUL_CONFIG = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 256, "num_warps": 8, "num_stages": 1}

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(gpu_count() == 0, reason="needs a CUDA GPU")]


def _out_dir() -> Path | None:
    d = os.environ.get("KPILOT_FIXTURE_OUT")
    if not d:
        return None
    p = Path(d)
    p.mkdir(parents=True, exist_ok=True)
    return p


def _save(name: str, data: bytes | str) -> None:
    d = _out_dir()
    if d is not None:
        (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def _valid(record: msgspec.Struct, name: str) -> None:
    jsonschema.validate(msgspec.to_builtins(record), msgspec.json.schema(type(record)))
    _save(f"{name}.json", msgspec.json.format(msgspec.json.encode(record)))


def test_bench_vector_add_full() -> None:
    out = bench.run(BenchInput(task_path=VECTOR_ADD, shape="full"))
    assert isinstance(out, BenchOutput)
    _valid(out, "bench_vector_add_full")
    s = out.stats
    assert s.n == len(out.samples_ms) >= 10
    assert s.p20_ms <= s.median_ms <= s.p80_ms
    assert not out.method.cuda_graph and out.method.calls_per_sample == 1
    # 2^26 fp32: 805 MB moved per call; the H200 copy ceiling is 4.35 TB/s (GPU.md), so 0.1-2 ms.
    assert 0.1 < s.median_ms < 2.0
    assert out.tbytes_per_s is not None and 1.0 < out.tbytes_per_s < 4.9
    assert s.cv < 0.05
    assert out.provenance.device and out.provenance.cuda
    assert out.provenance.triton and out.provenance.torch and out.provenance.driver
    assert out.clocks_before.sm_clock_mhz is not None and out.clocks_before.sm_clock_mhz > 0


def test_bench_micro_uses_cuda_graph_replay() -> None:
    out = bench.run(BenchInput(task_path=VECTOR_ADD, shape="micro"))  # n = 4099: a few microseconds
    _valid(out, "bench_vector_add_micro")
    assert out.method.cuda_graph and out.method.calls_per_sample > 1
    assert 0 < out.stats.median_ms < 0.05


def test_bench_a_host_sync_launch_falls_back_from_graph_replay_with_the_whole_reason() -> None:
    task = str(ROOT / "tests" / "fixtures" / "tasks" / "add_host_sync.py")
    # "on": the host round trip of .item() lies between the estimate's events, so auto may not ask at all
    out = bench.run(BenchInput(task_path=task, shape="micro", cuda_graph="on"))
    _valid(out, "bench_host_sync_micro")
    assert not out.method.cuda_graph and out.method.calls_per_sample == 1
    why = out.method.graph_fallback
    assert why.startswith("timed without CUDA-graph capture, one call per sample: cuda_graph='on' asked"), why
    assert "launch synchronises with the host: RuntimeError:" in why, why
    assert why.endswith("; launch() calls line 37: `x.abs().max().item()`"), why
    assert why in out.method.description


def test_bench_restores_declared_in_place_inputs() -> None:
    task = str(ROOT / "tests" / "fixtures" / "tasks" / "add_inplace_declared.py")
    out = bench.run(BenchInput(task_path=task, shape="micro"))
    _valid(out, "bench_inplace_micro")
    assert out.method.cuda_graph and out.method.calls_per_sample == 1  # one call per replay: restored
    assert "restored before every timed call, outside the events" in out.method.description
    assert 0 < out.stats.median_ms < 0.05


def test_bench_ab_interleaved_two_configs() -> None:
    out = bench_ab.run(
        BenchABInput(
            a=BenchSubject(task_path=VECTOR_ADD, config={"BLOCK": 128}, label="B128"),
            b=BenchSubject(task_path=VECTOR_ADD, config={"BLOCK": 1024}, label="B1024"),
            shape="full",
        )
    )
    assert isinstance(out, BenchABOutput)
    _valid(out, "bench_ab_vector_add")
    # Interleaved: every round timed both sides (capped rounds are dropped from both), ABBA order.
    assert len(out.a.samples_ms) == len(out.b.samples_ms) >= 10
    assert out.order == "ABBA" and "interleaved ABBA" in out.method.description
    assert out.a.config["BLOCK"] == 128 and out.b.config["BLOCK"] == 1024
    assert out.ci_low <= out.speedup <= out.ci_high
    # This assertion used to be 0.75 < speedup < 1.25 (both at the copy ceiling). The H200 measured
    # B128 0.3210 ms (2.51 TB/s), B1024 0.1886 ms (4.27 TB/s): speedup 1.70, 95 % CI 1.7015-1.7033
    # (tests/fixtures/h200/bench_ab_vector_add.json). BLOCK 128 with 4 warps is one 4-byte access per thread
    # and 524288 programs; 1024 gives 8 elements (two 128-bit accesses) per thread. So: B1024 is faster and
    # the interval says so, i.e. it excludes 1.
    assert out.ci_low > 1.0
    # Neither side beats the copy roofline: bytes_moved (3 x 4 B x 2^26 = 805 MB) / median under GPU.md's
    # measured 4.35 TB/s, with 3 % for that ceiling being a measurement itself (bench_tool_noise.json on
    # 2^28 measured 4.30-4.37 TB/s). Faster than that means the timer missed work.
    moved = 3.0 * 4 * (1 << 26)
    tb_s = {side.label: moved / (side.stats.median_ms * 1e-3) / 1e12 for side in (out.a, out.b)}
    assert all(0 < v < 4.35 * 1.03 for v in tb_s.values()), tb_s
    assert tb_s["B1024"] > 0.8 * 4.35, tb_s  # the wide blocks do reach the ceiling (98 % measured)


def test_ncu_profile_vector_add(tmp_path: Path) -> None:
    out = ncu_profile.run(NcuProfileInput(task_path=VECTOR_ADD, shape="full", artifact_dir=str(tmp_path)))
    assert isinstance(out, NcuProfileOutput)
    _valid(out, "ncu_profile_vector_add")
    p = out.profile
    assert p.kernel == "add_kernel" and "H200" in p.device
    values = {v.name: v for v in p.values}
    # fp32, contiguous, 128-bit accesses: 4 sectors per request is ideal (GPU.md memory row).
    assert 3.5 <= values["load_sectors_per_request"].value <= 16.5
    assert values["threads_per_instruction"].value > 24
    assert values["dram_throughput_pct"].value > 30
    assert {a.name for a in p.absent}.isdisjoint(values)
    assert out.report_path and Path(out.report_path).exists()
    _save("ncu_vector_add.ncu-rep", Path(out.report_path).read_bytes())
    ncu = find_tool("ncu")
    assert ncu is not None
    csv = subprocess.run(
        [ncu, "--import", out.report_path, "--csv", "--page", "raw"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    _save("ncu_vector_add_raw.csv", csv)


def test_ncu_profile_matmul_uses_tensor_cores(tmp_path: Path) -> None:
    out = ncu_profile.run(
        NcuProfileInput(
            task_path=MATMUL,
            shape="edge:0",
            artifact_dir=str(tmp_path),
            config={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32},
        )
    )
    _valid(out, "ncu_profile_matmul")
    values = {v.name: v for v in out.profile.values}
    assert out.profile.kernel == "matmul_kernel"
    assert "tensor_pipe_active_pct" in values or "gmma_instructions" in values


def test_sanitize_clean_task() -> None:
    out = sanitize.run(SanitizeInput(task_path=VECTOR_ADD, tools=["memcheck", "racecheck"]))
    assert isinstance(out, SanitizeOutput)
    _valid(out, "sanitize_vector_add")
    assert out.verdict == "clean", out
    assert [r.tool for r in out.reports] == ["memcheck", "racecheck"]
    assert all(r.errors == 0 for r in out.reports)


def test_sanitize_finds_the_wild_read() -> None:
    sanitizer = find_tool("compute-sanitizer")
    assert sanitizer is not None
    # The raw text first (a parser fixture), then the tool on the same task.
    req = SanitizeWorkerRequest(
        sanitizer=sanitizer,
        tools=["memcheck"],
        timeout_s=110,
        launch=LaunchTaskRequest(task_path=WILD_READ, shape="micro"),
    )
    outcome = run_worker(
        "services.toolrunner.tools.sanitize.worker",
        msgspec.json.encode(req),
        Limits(timeout_s=120, memory_mb=None, gpu=0),
    )
    assert outcome.status == "ok" and outcome.result is not None, outcome.message
    (raw,) = msgspec.json.decode(outcome.result, type=SanitizeWorkerResult).runs
    _save("sanitizer_memcheck_wild_read.txt", raw.output)
    rep = parse_sanitizer_output(raw.output, "memcheck", raw.returncode)
    assert rep.verdict == "errors" and rep.errors and rep.errors > 0, raw.output[-3000:]
    assert any("Invalid __global__ read" in f.kind for f in rep.findings)
    assert any(f.kernel == "add_kernel" for f in rep.findings)
    out = sanitize.run(SanitizeInput(task_path=WILD_READ, tools=["memcheck"], kernel="add_kernel"))
    _valid(out, "sanitize_wild_read")
    assert out.verdict == "errors"


def test_autotune_keeps_failed_configs() -> None:
    ok = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2}
    # Needs 262144 B of shared memory on edge:0 (the compile tool's shared_bytes, checked on CPU by
    # test_gpu_tools_cpu.py::test_autotune_too_big_config_exceeds_hopper_shared_memory) > the 232448 B
    # (227 KB) a Hopper block may have: Triton raises OutOfResources when it loads the kernel.
    # 256x256x128 / 4 stages ran on the H200 (0.1156 ms, tests/fixtures/h200/autotune_matmul.json): edge:0's
    # strides (77, 131) are not multiples of 16, so the loads are not pipelined and it needs 131072 B only.
    too_big = TOO_BIG_MATMUL_CONFIG
    out = autotune.run(AutotuneInput(task_path=MATMUL, shape="edge:0", configs=[ok, too_big]))
    assert isinstance(out, AutotuneOutput)
    _valid(out, "autotune_matmul")
    good, bad = out.results
    assert good.median_ms is not None and good.median_ms > 0 and not good.error
    assert good.p20_ms is not None and good.p80_ms is not None
    assert bad.median_ms is None and bad.compile_error and "OutOfResources" in bad.error
    assert out.best is not None and out.best.config == good.config


def test_autotune_vector_add_space() -> None:
    out = autotune.run(AutotuneInput(task_path=VECTOR_ADD, shape="full", max_configs=6))
    _valid(out, "autotune_vector_add")
    assert len(out.results) == 6 and out.space_size > 6
    assert all(r.median_ms is not None for r in out.results)
