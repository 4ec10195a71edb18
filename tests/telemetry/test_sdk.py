"""The launch SDK against Triton 3.6.0's real hook chain and LazyDict.

On CPU a kernel is compiled for cuda:90 (no GPU needed) and Triton's own `CompiledKernel.launch_metadata`
builds the LazyDict a launch would pass to the hooks; only `_init_handles` (which loads the cubin onto a
GPU) is skipped. The hooks are then called through `triton.knobs.runtime.launch_{enter,exit}_hook`, as the
NVIDIA launcher does around `cuLaunchKernelEx`. The interpreter does not call launch hooks at all.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
import triton
import triton.language as tl
from triton import knobs
from triton.backends.compiler import GPUTarget

from services.telemetry.records import LaunchRecord
from services.telemetry.sdk import LaunchTelemetry, kernel_shares


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


class ManualTimer:
    """Timer whose launches finish when the test says so (stands in for CUDA events on CPU)."""

    def __init__(self) -> None:
        self.started = 0
        self.done: dict[int, float] = {}
        self.released: list[int] = []

    def start(self) -> int:
        self.started += 1
        return self.started

    def stop(self, token: int) -> None:
        pass

    def elapsed_us(self, token: int) -> float | None:
        return self.done.get(token)

    def release(self, token: int) -> None:
        self.released.append(token)


@pytest.fixture(scope="module")
def compiled() -> Any:
    src = triton.compiler.ASTSource(
        fn=add_kernel,
        signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 1024},
    )
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32))
    k._init_handles = lambda: None  # loading the cubin needs a GPU; metadata does not
    return k


@pytest.fixture
def tel() -> Any:
    t = LaunchTelemetry(sample_fraction=0.5, timer=ManualTimer(), clock=iter(range(1000)).__next__)
    t.instrument(add_kernel)
    t.install()
    yield t
    t.uninstall()
    add_kernel.launch_metadata = None


def launch(k: Any, grid: tuple[int, ...], n: int = 4096) -> None:
    md = k.launch_metadata(grid, 0, 0, 0, 0, n, 1024)  # what CompiledKernel.run receives
    knobs.runtime.launch_enter_hook(md)
    knobs.runtime.launch_exit_hook(md)


def test_hooks_record_name_grid_config_and_counts(compiled: Any, tel: LaunchTelemetry) -> None:
    # Grids as users write them: Triton hands (4,) to launch_metadata unchanged, so the H200 run of
    # test_real_launches_on_gpu (benchmarks/runs/legacy/device_run1.sh) recorded [1024] for add_kernel[(1024,)].
    # 3-D, padded with 1s, is the one normal form: (4,), (4, 1) and (4, 1, 1) are the same launch.
    launch(compiled, (4,))
    launch(compiled, (4, 1))
    launch(compiled, (4, 1, 1))
    launch(compiled, (8, 2))
    recs = sorted(tel.drain(), key=lambda r: r.grid)
    assert [(r.kernel, r.grid, r.launches) for r in recs] == [
        ("add_kernel", [4, 1, 1], 3),
        ("add_kernel", [8, 2, 1], 1),
    ]
    assert recs[0].config == {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "BLOCK": 1024}
    assert tel.drain() == []  # drained


def test_sampled_durations_only_for_timed_finished_launches(compiled: Any, tel: LaunchTelemetry) -> None:
    timer: ManualTimer = tel._timer  # type: ignore[assignment]
    for _ in range(4):  # sample_fraction 0.5: launches 0 and 2 are timed
        launch(compiled, (4, 1, 1))
    assert timer.started == 2
    timer.done[1] = 12.5
    (r,) = tel.drain()
    assert r.launches == 4 and r.durations_us == [12.5]  # launch 3 not finished: waits
    timer.done[2] = 13.5
    (late,) = tel.drain()
    assert late.launches == 0 and late.durations_us == [13.5]
    assert timer.released == [1, 2]


def test_uninstalled_hooks_record_nothing(compiled: Any, tel: LaunchTelemetry) -> None:
    tel.uninstall()
    launch(compiled, (4, 1, 1))
    assert tel.drain() == []


def test_without_instrument_only_the_name_is_known(compiled: Any) -> None:
    t = LaunchTelemetry(sample_fraction=0)
    with t:
        launch(compiled, (4, 1, 1))
    (r,) = t.drain()
    assert (r.kernel, r.grid, r.config, r.durations_us) == ("add_kernel", [], {}, [])


def test_instrument_chains_a_users_launch_metadata(compiled: Any) -> None:
    add_kernel.launch_metadata = lambda grid, md, args: {"bytes": 3 * 4 * args["n"]}
    t = LaunchTelemetry(sample_fraction=0)
    t.instrument(add_kernel)
    t.instrument(add_kernel)  # idempotent
    try:
        md = compiled.launch_metadata((4,), 0, 0, 0, 0, 4096, 1024)
        data = md.get()
        assert data["bytes"] == 3 * 4 * 4096 and data["kpilot_grid"] == (4, 1, 1)
    finally:
        add_kernel.launch_metadata = None
    with pytest.raises(TypeError, match="triton.jit"):
        t.instrument(lambda: None)
    with pytest.raises(ValueError, match="fraction"):
        LaunchTelemetry(sample_fraction=2.0)


def test_kernel_shares() -> None:
    recs = [
        LaunchRecord(kernel="matmul", launches=10, t_first=0, t_last=1, durations_us=[100.0, 120.0]),
        LaunchRecord(kernel="matmul", launches=10, t_first=1, t_last=2, durations_us=[110.0]),
        LaunchRecord(kernel="add", launches=100, t_first=0, t_last=2, durations_us=[11.0]),
        LaunchRecord(kernel="untimed", launches=5, t_first=0, t_last=2),
    ]
    shares = kernel_shares(recs)
    assert [s.kernel for s in shares] == ["matmul", "add"]  # never timed: left out, not guessed
    m, a = shares
    assert (m.launches, m.mean_us) == (20, pytest.approx(110.0))
    assert m.share == pytest.approx(2200 / (2200 + 1100)) and a.share == pytest.approx(1100 / 3300)


def test_a_kernel_share_names_the_config_that_took_most_of_its_time() -> None:
    """Which version ran: the critic blames a patch only for telemetry of its own config."""
    recs = [
        LaunchRecord(kernel="matmul", launches=10, t_first=0, t_last=1, durations_us=[1600.0],
                     config={"BLOCK_M": 32, "num_warps": 4}),
        LaunchRecord(kernel="matmul", launches=30, t_first=1, t_last=2, durations_us=[190.0],
                     config={"BLOCK_M": 128, "num_warps": 8}),
        LaunchRecord(kernel="matmul", launches=50, t_first=1, t_last=2, durations_us=[], config={"BLOCK_M": 64}),
    ]
    [m] = kernel_shares(recs)
    assert m.config == {"BLOCK_M": 32, "num_warps": 4}  # 16 ms of time against 5.7 ms; untimed never counts


@pytest.mark.gpu
def test_real_launches_on_gpu() -> None:
    import torch

    t = LaunchTelemetry(sample_fraction=1.0)
    t.instrument(add_kernel)
    x = torch.randn(1 << 20, device="cuda")
    out = torch.empty_like(x)
    with t:
        for _ in range(20):
            add_kernel[(triton.cdiv(x.numel(), 1024),)](x, x, out, x.numel(), BLOCK=1024)
        torch.cuda.synchronize()
    recs = t.drain()
    add_kernel.launch_metadata = None
    (r,) = recs
    assert r.kernel == "add_kernel" and r.launches == 20 and r.grid == [1024, 1, 1]
    assert len(r.durations_us) == 20 and all(d > 0 for d in r.durations_us)
    out_dir = os.environ.get("KPILOT_FIXTURE_OUT")
    if out_dir:
        p = Path(out_dir) / "telemetry" / "launch_records.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"".join(msgspec.json.encode(x) + b"\n" for x in recs))


def test_a_failing_hook_never_breaks_the_launch() -> None:
    class Broken:
        def get(self) -> dict[str, object]:
            raise RuntimeError("boom")

    t = LaunchTelemetry(sample_fraction=0)
    t.on_enter(Broken())
    t.on_exit(Broken())
    assert t.errors == 1 and t.drain() == []
