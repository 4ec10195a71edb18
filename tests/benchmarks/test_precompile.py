"""exhaustive.py's precompile phase: slicing the configs, the shared Triton cache, the worker without a GPU.

The CPU tests run the real worker and the real sandbox on l1_vector_add's real legal configs; the GPU test
(`@pytest.mark.gpu`, run on the H200) fills a shared cache and times the same configs from it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from benchmarks import exhaustive
from benchmarks.precompile_worker import NO_GPU, PrecompileJob
from benchmarks.search_eff import config_key
from benchmarks.suite import TASKS_DIR
from services.toolrunner.sandbox import Limits, run_worker

ROOT = Path(__file__).resolve().parents[2]
VECTOR_ADD = str(TASKS_DIR / "l1_vector_add.py")


@pytest.fixture(scope="module")
def configs() -> list[dict]:
    return exhaustive.legal_configs(VECTOR_ADD).configs  # 96 (test_exhaustive_cpu.py says why)


@pytest.mark.parametrize("procs", [1, 5, 14, 95, 96, 200])
def test_slices_cover_every_config_exactly_once(configs: list[dict], procs: int) -> None:
    jobs = exhaustive.precompile_jobs(VECTOR_ADD, configs, procs)
    assert len(jobs) == min(procs, len(configs))
    keys = [config_key(c) for j in jobs for c in j.configs]
    assert sorted(keys) == sorted(config_key(c) for c in configs)
    assert len(set(keys)) == len(keys) == 96
    sizes = [len(j.configs) for j in jobs]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1  # balanced, none empty
    assert all(j.task_path == VECTOR_ADD and j.shape == "full" for j in jobs)


def test_zero_procs_or_no_configs_means_no_precompile(configs: list[dict]) -> None:
    assert exhaustive.precompile_jobs(VECTOR_ADD, configs, 0) == []
    assert exhaustive.precompile_jobs(VECTOR_ADD, [], 14) == []
    # Had a worker started on this CPU-only machine, its no-GPU failure would be in `failures`.
    assert exhaustive.precompile(VECTOR_ADD, configs, 0, gpu=0, timeout_s=60.0) == exhaustive.Precompiled()


def test_the_worker_without_a_gpu_fails_with_one_clear_line(configs: list[dict]) -> None:
    job = PrecompileJob(task_path=VECTOR_ADD, configs=configs[:2])
    # gpu=None hides every GPU, so this holds on the H200 too.
    out = run_worker(
        "benchmarks.precompile_worker", msgspec.json.encode(job), Limits(timeout_s=60, memory_mb=None)
    )
    assert out.status == "failed", out.stderr_tail
    assert out.message == NO_GPU
    assert "Traceback" not in out.stderr_tail


def test_failed_slices_are_reported_not_raised(configs: list[dict]) -> None:
    # Two workers side by side (the thread pool path), both without a GPU: both fail, nothing raises.
    # CUDA_VISIBLE_DEVICES=99 names no device, so this holds on the H200 too.
    done = exhaustive.precompile(VECTOR_ADD, configs[:4], 2, gpu=99, timeout_s=60.0)
    assert done.procs == 2 and done.configs == 4 and done.compiled == 0
    assert done.failures == [f"failed: {NO_GPU}"] * 2, done.failures


def test_the_shared_cache_reaches_the_workers_given_it_and_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = exhaustive.cache_env(tmp_path / "cache")
    (name, cache), = env
    assert name == "TRITON_CACHE_DIR" and Path(cache).is_absolute() and Path(cache).is_dir()
    out = run_worker("tests.toolrunner.workers_for_tests.env_probe", b"{}", Limits(timeout_s=30, env=env))
    assert out.status == "ok", out.stderr_tail
    assert json.loads(out.result or b"{}")["env"]["TRITON_CACHE_DIR"] == cache
    # A TRITON_CACHE_DIR in the runner's own environment is not passed on: a sandboxed candidate never
    # shares (or writes into) a cache it was not given.
    monkeypatch.setenv("TRITON_CACHE_DIR", cache)
    out = run_worker("tests.toolrunner.workers_for_tests.env_probe", b"{}", Limits(timeout_s=30))
    got = json.loads(out.result or b"{}")
    assert got["env"]["TRITON_CACHE_DIR"].startswith(got["scratch"])


def test_a_table_written_before_precompile_s_still_reads() -> None:
    old = msgspec.to_builtins(exhaustive.Table(task="t", space_size=1, legal=1, complete=False))
    del old["precompile_s"]
    assert msgspec.json.decode(msgspec.json.encode(old), type=exhaustive.Table).precompile_s == 0.0


def test_dry_run_counts_the_configs() -> None:
    out = subprocess.run(
        [sys.executable, "benchmarks/exhaustive.py", "--dry-run", "--tasks", "l1_vector_add,l1_relu"],
        cwd=ROOT,
        check=False,  # the assertion below shows stderr
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    # l1_relu: SPACE 120, its constraint keeps 102 (the same count the full --dry-run prints).
    assert out.stdout.splitlines() == [
        "l1_vector_add: 96 legal of 105",
        "l1_relu: 102 legal of 120",
        "total: 198 configs",
    ]


def test_negative_precompile_procs_is_refused() -> None:
    with pytest.raises(SystemExit):
        exhaustive.main(["--dry-run", "--tasks", "l1_relu", "--precompile-procs", "-1"])


@pytest.mark.gpu
def test_precompiled_configs_fill_the_shared_cache_and_time_from_it(
    configs: list[dict], tmp_path: Path
) -> None:
    from services.toolrunner.tools.autotune import spec as autotune
    from shared.tools.bench import AutotuneInput

    some = configs[:: len(configs) // 8][:8]
    env = exhaustive.cache_env(tmp_path / "cache")
    done = exhaustive.precompile(VECTOR_ADD, some, 4, gpu=0, timeout_s=300.0, env=env)
    cubins = sorted(Path(env[0][1]).rglob("*.cubin"))
    timed = autotune.run(
        AutotuneInput(task_path=VECTOR_ADD, configs=some, max_configs=8, rep_ms=20.0), env=env
    )
    if dest := os.environ.get("KPILOT_FIXTURE_OUT"):
        Path(dest).mkdir(parents=True, exist_ok=True)
        Path(dest, "precompile_vector_add.json").write_bytes(msgspec.json.encode(done))
        Path(dest, "precompile_vector_add_autotune.json").write_bytes(msgspec.json.encode(timed))
    assert done.failures == [] and done.errors == {} and done.compiled == 8, done
    assert len(cubins) >= 8  # BLOCK, num_warps and num_stages all change the compiled kernel
    assert all(r.median_ms is not None for r in timed.results), [r.error for r in timed.results]
