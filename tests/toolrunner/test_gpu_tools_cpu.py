"""The GPU-only tools on a machine without a GPU: they say so (ToolFailure "unavailable"), never a number.

Also their specs: each is marked needs_gpu, and every tool's input/output records give JSON Schemas.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from services.toolrunner import autotune, bench, bench_ab, launch_config, ncu_profile, sanitize, sass
from services.toolrunner.nvtools import gpu_count
from services.toolrunner.tool import ToolFailure
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
    ids=lambda x: getattr(x, "__name__", "").rsplit(".", 1)[-1] or None,
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
