"""The GPU-only tools on a machine without a GPU: they say so (ToolFailure "unavailable"), never a number.

Also their specs: each is marked needs_gpu, and every tool's input/output records give JSON Schemas.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from services.toolrunner.nvtools import gpu_count
from services.toolrunner.tool import ToolFailure
from services.toolrunner.tools.autotune import spec as autotune
from services.toolrunner.tools.bench import spec as bench
from services.toolrunner.tools.bench_ab import spec as bench_ab
from services.toolrunner.tools.launch_config import spec as launch_config
from services.toolrunner.tools.ncu_profile import spec as ncu_profile
from services.toolrunner.tools.sanitize import spec as sanitize
from services.toolrunner.tools.sass import spec as sass
from shared.tools.bench import AutotuneInput, BenchABInput, BenchInput, BenchSubject
from shared.tools.profile import NcuProfileInput, SanitizeInput

VECTOR_ADD = str(Path(__file__).resolve().parents[2] / "examples" / "vector_add.py")
no_gpu = pytest.mark.skipif(gpu_count() > 0, reason="this machine has a GPU")


@no_gpu
@pytest.mark.parametrize(
    "tool, req",
    [
        (bench, BenchInput(task_path=VECTOR_ADD)),
        (bench_ab, BenchABInput(a=BenchSubject(task_path=VECTOR_ADD), b=BenchSubject(task_path=VECTOR_ADD))),
        (ncu_profile, NcuProfileInput(task_path=VECTOR_ADD)),
        (sanitize, SanitizeInput(task_path=VECTOR_ADD)),
        (autotune, AutotuneInput(task_path=VECTOR_ADD)),
    ],
    ids=lambda x: x.SPEC.name if hasattr(x, "SPEC") else None,
)
def test_gpu_tool_without_gpu_is_unavailable(tool, req) -> None:
    with pytest.raises(ToolFailure) as e:
        tool.SPEC.run(req)
    assert e.value.code == "unavailable" and "no GPU" in e.value.message


def test_specs() -> None:
    gpu = {m.SPEC.name for m in (bench, bench_ab, ncu_profile, sanitize, autotune) if m.SPEC.needs_gpu}
    assert gpu == {"bench", "bench_ab", "ncu_profile", "sanitize", "autotune"}
    assert not sass.SPEC.needs_gpu and sass.SPEC.cacheable
    assert not launch_config.SPEC.needs_gpu and launch_config.SPEC.cacheable
    for m in (bench, bench_ab, ncu_profile, sanitize, autotune, sass, launch_config):
        for t in (m.SPEC.input, m.SPEC.output):
            assert msgspec.json.schema(t)["$ref"]


@pytest.mark.parametrize(
    "tool, req, fix",
    [
        (bench, BenchInput(task_path=VECTOR_ADD, rep_ms=0), "rep_ms"),
        (
            bench_ab,
            BenchABInput(
                a=BenchSubject(task_path=VECTOR_ADD), b=BenchSubject(task_path=VECTOR_ADD), n_bootstrap=5
            ),
            "n_bootstrap",
        ),
        (autotune, AutotuneInput(task_path=VECTOR_ADD, max_configs=0), "max_configs"),
        (sanitize, SanitizeInput(task_path=VECTOR_ADD, tools=[]), "memcheck"),
    ],
)
def test_checks_refuse_bad_requests_before_any_gpu_work(tool, req, fix) -> None:
    with pytest.raises(ToolFailure) as e:
        tool.SPEC.check(req)
    assert e.value.code == "refused" and fix in e.value.message


# cudaDevAttrMaxSharedMemoryPerBlockOptin on Hopper: 227 KB (GPU.md), what Triton's CompiledKernel
# compares `metadata.shared` with before raising OutOfResources at load time.
HOPPER_MAX_SHARED_PER_BLOCK = 227 * 1024


@pytest.mark.slow
def test_autotune_too_big_config_exceeds_hopper_shared_memory(tmp_path: Path) -> None:
    """The config test_autotune_keeps_failed_configs expects to fail needs more shared memory than Hopper has.

    Measured with this compile on CPU (Triton 3.6.0, cuda:90, ~30 s on 2 cores): 256x256x256 / 1 stage
    needs 262144 B at edge:0. The first choice, 256x256x128 / 4 stages, needs only 131072 B there (edge:0's
    strides 77 and 131 are not multiples of 16, so Triton does not pipeline the loads and the stages add
    nothing), and it ran on the H200 (tests/fixtures/h200/autotune_matmul.json: 0.1156 ms); at "full"
    (8192^3, aligned) the same config needs 524288 B.
    """
    from services.toolrunner.artifacts import LocalArtifactStore, LocalResultCache
    from services.toolrunner.tools.compile.spec import Compiler
    from shared.tools.compile import CompileInput
    from tests.toolrunner.test_gpu_tools import MATMUL, TOO_BIG_MATMUL_CONFIG

    compiler = Compiler(store=LocalArtifactStore(tmp_path / "a"), cache=LocalResultCache(tmp_path / "c"))
    out = compiler.run(CompileInput(task_path=MATMUL, config=TOO_BIG_MATMUL_CONFIG, shape="edge:0"))
    assert out.shared_bytes is not None and out.shared_bytes > HOPPER_MAX_SHARED_PER_BLOCK, out.shared_bytes
