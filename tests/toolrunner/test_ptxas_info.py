"""ptxas -v parsing on real captured outputs (tests/fixtures/ptxas/, made by capture_ptxas.py), and the
ptxas_info tool end to end on CPU, including a kernel that really spills."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.toolrunner.artifacts import LocalArtifactStore, LocalResultCache
from services.toolrunner.tool import ToolFailure
from services.toolrunner.tools.compile.spec import Compiler
from services.toolrunner.tools.ptxas_info.spec import SPEC, PtxasInfo
from shared.parsers.ptxas import parse_ptxas_v, parse_res_usage, with_res_usage
from shared.tools.inspect import ConstantBank, PtxasInfoInput

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "ptxas"
CASES = json.loads((FIXTURES / "cases.json").read_text())
MATMUL_SPILL = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 3, "maxnreg": 96}


def _fixture(case: str) -> str:
    return (FIXTURES / f"{case}.txt").read_text()


# Read off the captured files by eye: (case, kernel, registers, barriers, stack, spill stores, spill loads).
EXPECTED = [
    ("vector_add", "add_kernel", 14, 0, 0, 0, 0),
    ("row_softmax", "softmax_kernel", 26, 1, 0, 0, 0),
    ("matmul", "matmul_kernel", 48, 1, 0, 0, 0),
    ("matmul_spill", "matmul_kernel", 96, 1, 592, 1284, 1028),
    ("matmul_spill.cuda13", "matmul_kernel", 96, 1, 592, 1284, 1028),
    ("attention_fwd", "attn_fwd_kernel", 117, 1, 0, 0, 0),
    ("transpose_cuda", "transpose_naive", 12, 0, 0, 0, 0),
    ("transpose_tiled_cuda", "transpose_tiled", 24, 1, 0, 0, 0),
]


@pytest.mark.parametrize(("case", "kernel", "regs", "barriers", "stack", "st", "ld"), EXPECTED)
def test_parse_captured_outputs(
    case: str, kernel: str, regs: int, barriers: int, stack: int, st: int, ld: int
) -> None:
    report = parse_ptxas_v(_fixture(case))
    (entry,) = [f for f in report.functions if f.is_entry]
    assert entry.name == kernel == CASES[case]["kernel"]
    assert entry.arch == "sm_90a"
    assert (entry.registers, entry.barriers, entry.stack_frame_bytes) == (regs, barriers, stack)
    assert (entry.spill_stores_bytes, entry.spill_loads_bytes) == (st, ld)
    assert entry.spills == (st > 0)


def test_spilling_kernel_details() -> None:
    report = parse_ptxas_v(_fixture("matmul_spill"))
    (f,) = report.functions
    assert f.cumulative_stack_bytes == 592
    assert (
        len(report.messages) == 1 and "(C7511)" in report.messages[0] and "serialized" in report.messages[0]
    )
    assert CASES["matmul_spill"]["config"]["maxnreg"] == 96


def test_static_shared_gmem_and_device_function() -> None:
    report = parse_ptxas_v(_fixture("transpose_tiled_cuda"))
    by_name = {f.name: f for f in report.functions}
    assert by_name["transpose_tiled"].shared_bytes == 4224  # float tile[32][33]
    assert report.global_bytes == 4  # __device__ int visits
    helper = by_name["_Z6scaledfi"]  # the __noinline__ device function: properties but no "Used" line
    assert not helper.is_entry and helper.registers is None and helper.stack_frame_bytes == 0
    assert parse_ptxas_v(_fixture("attention_fwd")).global_bytes == 11


def test_constant_banks_from_res_usage() -> None:
    common, per_fn = parse_res_usage((FIXTURES / "transpose_tiled_cuda.res-usage.txt").read_text())
    # __constant__ float scale_table[64] = 256 bytes in bank 3; kernel parameters in bank 0.
    assert ConstantBank(bank=3, bytes=256) in common
    assert per_fn == {"transpose_tiled": [ConstantBank(bank=0, bytes=552)]}
    report = with_res_usage(
        parse_ptxas_v(_fixture("transpose_tiled_cuda")),
        (FIXTURES / "transpose_tiled_cuda.res-usage.txt").read_text(),
    )
    tiled = next(f for f in report.functions if f.name == "transpose_tiled")
    assert tiled.constant == [ConstantBank(bank=0, bytes=552)] and report.module_constant == common


def test_parse_ignores_noise_and_empty_text() -> None:
    assert parse_ptxas_v("").functions == []
    report = parse_ptxas_v("some compiler banner\n" + _fixture("vector_add") + "ptxas warning : odd thing\n")
    assert [f.name for f in report.functions] == ["add_kernel"]
    assert report.messages == ["warning: odd thing"]


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> PtxasInfo:
    # The same directory test_compile.py uses: in one session its compiles are cache hits here.
    root = tmp_path_factory.getbasetemp() / "kpilot-compile"
    compiler = Compiler(store=LocalArtifactStore(root / "artifacts"), cache=LocalResultCache(root / "cache"))
    return PtxasInfo(
        compiler=compiler, cache=LocalResultCache(tmp_path_factory.getbasetemp() / "kpilot-ptxas")
    )


def test_tool_reports_a_real_spill(tool: PtxasInfo) -> None:
    out = tool.run(PtxasInfoInput(task_path=str(ROOT / "examples" / "matmul.py"), config=MATMUL_SPILL))
    k = out.kernel_resources()
    assert k.spills and k.registers == 96
    assert (
        out.ptxas.name == "triton_ptxas" and "-lineinfo" in out.command and "--gpu-name=sm_90a" in out.command
    )
    assert out.dynamic_shared_bytes is not None and out.dynamic_shared_bytes > 0  # Triton's pipelined tiles
    assert k.constant and k.constant[0].bank == 0
    if out.ptxas.version == CASES["matmul_spill"]["ptxas_version"]:  # same assembler: same numbers
        assert out.log.splitlines()[:-1] == _fixture("matmul_spill").splitlines()[:-1]  # last: compile time
    hits = tool.hits
    assert (
        tool.run(PtxasInfoInput(task_path=str(ROOT / "examples" / "matmul.py"), config=MATMUL_SPILL)) == out
    )
    assert tool.hits == hits + 1


def test_tool_on_cuda_and_untuned_matmul(tool: PtxasInfo) -> None:
    cuda = tool.run(PtxasInfoInput(task_path=str(ROOT / "examples" / "transpose_cuda.py")))
    assert cuda.ptxas.name == "cuda_ptxas" and cuda.kernel_resources().name == "transpose_naive"
    assert cuda.dynamic_shared_bytes is None
    mm = tool.run(PtxasInfoInput(task_path=str(ROOT / "examples" / "matmul.py")))
    assert not mm.kernel_resources().spills and mm.config["BLOCK_M"] == 32


def test_refuses_unknown_kernel() -> None:
    assert SPEC.check is not None and SPEC.cacheable and SPEC.name == "ptxas_info"
    with pytest.raises(ToolFailure) as info:
        SPEC.check(PtxasInfoInput(task_path=str(ROOT / "examples" / "vector_add.py"), kernel="mul_kernel"))
    assert info.value.code == "refused" and "its kernels are ['add_kernel']" in info.value.message
