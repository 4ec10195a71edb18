"""launch_config against ncu's own occupancy figures on the H200 (shared/fixtures/h200-probe/ncu_raw.csv)."""

from __future__ import annotations

import math
from pathlib import Path

import jsonschema
import msgspec
import pytest

from services.toolrunner.tool import ToolFailure
from services.toolrunner.tools.launch_config.occupancy import launch_config
from services.toolrunner.tools.launch_config.spec import SPEC
from shared.gpu_facts import H200
from shared.parsers.ncu import parse_ncu_csv
from shared.tools.launch import LaunchConfigInput, LaunchConfigOutput

NCU = Path(__file__).resolve().parents[1] / "fixtures" / "h200-probe" / "ncu_raw.csv"


def _ncu_rows() -> list[dict[str, float]]:
    """One row per distinct launch configuration ncu profiled (Triton and torch kernels)."""
    seen, rows = set(), []
    for p in parse_ncu_csv(NCU.read_text()):
        m = {k: v.value for k, v in p.metrics.items() if v.value is not None}
        key = (
            m["launch__registers_per_thread"],
            m["launch__block_size"],
            m["launch__grid_size"],
            m["launch__shared_mem_per_block_static"] + m["launch__shared_mem_per_block_dynamic"],
            m["launch__shared_mem_config_size"],
        )
        if key not in seen:
            seen.add(key)
            rows.append(m)
    return rows


ROWS = _ncu_rows()


def test_fixture_covers_several_configurations() -> None:
    assert len(ROWS) >= 5  # add, softmax, transpose, torch's randn / add / reduce kernels


@pytest.mark.parametrize(
    "m",
    ROWS,
    ids=lambda m: (
        f"R{m['launch__registers_per_thread']:.0f}"
        f"-T{m['launch__block_size']:.0f}-S{m['launch__shared_mem_per_block_dynamic']:.0f}"
    ),
)
def test_limits_waves_and_occupancy_match_ncu(m: dict[str, float]) -> None:
    req = LaunchConfigInput(
        num_warps=int(m["launch__block_size"]) // 32,
        registers_per_thread=int(m["launch__registers_per_thread"]),
        shared_mem_bytes=int(
            m["launch__shared_mem_per_block_static"] + m["launch__shared_mem_per_block_dynamic"]
        ),
        grid=[int(m["launch__grid_size"])],
        shared_carveout_bytes=int(m["launch__shared_mem_config_size"]),
    )
    out = launch_config(req, H200)
    limits = {lim.resource: lim.blocks_per_sm for lim in out.limits}
    assert limits["warps"] == m["launch__occupancy_limit_warps"]
    assert limits["registers"] == m["launch__occupancy_limit_registers"]
    assert limits["shared_mem"] == m["launch__occupancy_limit_shared_mem"]
    assert limits["blocks"] == m["launch__occupancy_limit_blocks"]
    assert out.registers_allocated_per_thread == m["launch__registers_per_thread_allocated"]
    assert out.shared_allocated_per_block == m["launch__shared_mem_per_block_allocated"]
    assert out.waves is not None and round(out.waves, 2) == pytest.approx(
        m["launch__waves_per_multiprocessor"]
    )
    assert out.occupancy * 100 == pytest.approx(m["sm__maximum_warps_per_active_cycle_pct"])


def test_register_limited_launch_and_its_tail() -> None:
    # 44 registers x 8 warps (torch's randn kernel on the H200): registers allow 5 blocks, warps 8.
    out = SPEC.run(LaunchConfigInput(num_warps=8, registers_per_thread=44, grid=[1056]))
    assert isinstance(out, LaunchConfigOutput)
    assert out.blocks_per_sm == 5 and out.limiting == ["registers"]
    assert out.blocks_per_wave == 660 and out.full_waves == 1 and out.tail_blocks == 396
    assert out.wave_efficiency == pytest.approx(1.6 / 2)
    jsonschema.validate(msgspec.to_builtins(out), msgspec.json.schema(LaunchConfigOutput))


def test_ties_list_every_limiting_resource() -> None:
    # 4 warps at 32 registers: warps allow 16, registers 4 * floor(16384 / 1024) / 4 = 16.
    out = launch_config(LaunchConfigInput(num_warps=4, registers_per_thread=32, grid=[132 * 16]), H200)
    assert out.blocks_per_sm == 16 and set(out.limiting) == {"warps", "registers"}
    assert out.waves == 1.0 and out.tail_blocks == 0 and out.wave_efficiency == 1.0
    assert not out.small_grid


def test_shared_memory_limit_and_small_grid() -> None:
    # 98304 B (Triton matmul 128x128x64, 3 stages): (98304 + 1024) rounded = 99328 -> 2 blocks in 228 KB.
    # Registers (64 x 8 warps) would allow 4 * floor(16384 / 2048) / 8 = 4 blocks.
    out = launch_config(
        LaunchConfigInput(num_warps=8, registers_per_thread=64, shared_mem_bytes=98304, grid=[8, 8]), H200
    )
    assert out.limiting == ["shared_mem"] and out.blocks_per_sm == 2
    assert {lim.resource: lim.blocks_per_sm for lim in out.limits}["registers"] == 4
    assert out.small_grid and out.waves is not None and out.waves < 1
    assert out.notes  # says the largest carveout was assumed


def test_no_block_fits() -> None:
    # 32 warps x 255 registers: 4 * floor(16384 / 8192) = 8 warps < 32: the launch cannot run.
    out = launch_config(LaunchConfigInput(num_warps=32, registers_per_thread=255, grid=[10]), H200)
    assert out.blocks_per_sm == 0 and out.waves is None and "registers" in out.limiting
    assert "fail" in out.notes[0]
    assert not math.isnan(out.wave_efficiency)


@pytest.mark.parametrize(
    "bad, fix",
    [
        ({"num_warps": 0}, "1 to 32 warps"),
        ({"registers_per_thread": 300}, "1 to 255"),
        ({"shared_mem_bytes": 300_000}, "at most 232448"),
        ({"grid": []}, "1 to 3 positive"),
        ({"shared_carveout_bytes": 12345}, "carveouts are"),
        ({"device": "B200"}, "known devices are H200"),
    ],
)
def test_bad_requests_are_refused_with_the_fix(bad: dict, fix: str) -> None:
    args = {"num_warps": 4, "registers_per_thread": 32, "grid": [128], **bad}
    with pytest.raises(ToolFailure) as e:
        SPEC.check(LaunchConfigInput(**args))  # type: ignore[misc]
    assert e.value.code == "refused" and fix in e.value.message
