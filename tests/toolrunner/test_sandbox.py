"""The sandbox survives workers that crash, hang, eat memory or fail, and leaks nothing into or out of them.

Each test runs a real worker from tests/toolrunner/workers_for_tests/ through `run_worker`; nothing is
mocked. The runner (this pytest process) must come back with a status every time.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
import uuid
from pathlib import Path

import pytest

from services.toolrunner.confinement import SANDBOX_UID
from services.toolrunner.sandbox import Limits, SandboxOutcome, repo_root, run_worker
from tests.security.procs import still_alive_after, wait_for

W = "tests.toolrunner.workers_for_tests."


def test_segfault_via_ctypes_is_a_crash_with_the_signal_named() -> None:
    out = run_worker(W + "segfault", b"{}", Limits(timeout_s=30))
    assert out.status == "crashed"
    assert out.signal_name == "SIGSEGV"
    assert out.returncode == -11
    assert out.result is None
    assert out.message.startswith("worker crashed (SIGSEGV)")


def test_abort_is_a_crash_and_the_message_keeps_the_last_stderr_line() -> None:
    out = run_worker(W + "abort", b"{}", Limits(timeout_s=30))
    assert out.status == "crashed"
    assert out.signal_name == "SIGABRT"
    assert out.message == "worker crashed (SIGABRT): about to abort"


def test_a_result_written_before_a_crash_does_not_make_it_ok() -> None:
    out = run_worker(W + "result_then_crash", b"{}", Limits(timeout_s=30))
    assert out.status == "crashed"
    assert out.signal_name == "SIGSEGV"


def test_hang_times_out_and_every_process_of_the_worker_is_killed() -> None:
    # The grandchild is found on the host by its argv marker and held by a pidfd while the worker hangs;
    # after the timeout it must end (the pidfd turns readable), not just its pid be reused in the namespace.
    marker = f"kpilot-hang-{uuid.uuid4().hex}"
    box: list[SandboxOutcome] = []
    start = time.monotonic()
    thread = threading.Thread(target=lambda: box.append(
        run_worker(W + "hang", json.dumps({"marker": marker}).encode(), Limits(timeout_s=10))))
    thread.start()
    try:
        found = wait_for(marker, 1, timeout_s=10)
        assert len(found) == 1, "the worker's grandchild never started"
        fds = [os.pidfd_open(found[0])]
    finally:
        thread.join(timeout=30)
    elapsed = time.monotonic() - start
    out = box[0]
    assert out.status == "timeout"
    assert out.message == f"timed out after {out.duration_s:.1f} s"
    assert 10.0 <= out.duration_s < 20.0 and elapsed < 30.0
    assert re.search(r"grandchild=(\d+)", out.stdout_tail), out.stdout_tail
    assert still_alive_after(fds, timeout_s=10) == 0, "the worker's own child survived the timeout"


def test_a_grandchild_that_left_the_process_group_cannot_block_the_runner() -> None:
    # The grandchild sleeps 30 s holding the worker's stdout; before the sandbox fix the runner waited
    # for it. Run in a thread so a regression fails this test instead of hanging the suite.
    box: list[SandboxOutcome] = []
    thread = threading.Thread(target=lambda: box.append(run_worker(W + "escape_and_hang", b"{}",
                                                                   Limits(timeout_s=1))), daemon=True)
    thread.start()
    thread.join(timeout=20)
    assert not thread.is_alive(), "run_worker blocked on an escaped grandchild"
    assert box[0].status == "timeout"


def test_python_allocation_over_rlimit_as_is_out_of_memory() -> None:
    out = run_worker(W + "hog_python", b"{}", Limits(timeout_s=30, memory_mb=512))
    assert out.status == "out_of_memory"
    assert out.message == "worker ran out of memory: MemoryError"


def test_torch_allocation_over_rlimit_as_is_out_of_memory() -> None:
    # torch's CPU allocator reports a RuntimeError ("DefaultCPUAllocator: can't allocate memory"),
    # not MemoryError; 1500 MB lets torch import (about 1 GB of address space) but not take 4 GiB more.
    out = run_worker(W + "hog_torch", b"{}", Limits(timeout_s=60, memory_mb=1500))
    assert out.status == "out_of_memory", out.stderr_tail
    assert "DefaultCPUAllocator" in out.message


def test_the_same_allocation_without_a_cap_would_fit_so_the_cap_is_what_fails_it() -> None:
    # Guards the two tests above against passing for another reason (a broken worker): 4 GiB of
    # address space without RLIMIT_AS is only reserved, never touched, so it succeeds.
    out = run_worker(W + "hog_python", b"{}", Limits(timeout_s=30, memory_mb=None))
    assert out.status == "failed"  # exits 0 but writes no result file
    assert out.returncode == 0
    assert out.stdout_tail.strip() == str(4 << 30)


def test_failing_worker_is_failed_with_the_exception_as_message() -> None:
    out = run_worker(W + "fail", json.dumps({"kernel": "nope"}).encode(), Limits(timeout_s=30))
    assert out.status == "failed"
    assert out.returncode == 1
    assert out.result is None
    assert out.message == "ValueError: bad kernel name 'nope': use one of the task's KERNELS"


def test_unknown_worker_module_is_failed_not_an_exception() -> None:
    out = run_worker(W + "does_not_exist", b"{}", Limits(timeout_s=30))
    assert out.status == "failed"
    assert "No module named" in out.message


def test_environment_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KPILOT_TEST_SECRET", "hunter2")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "also-secret")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    out = run_worker(W + "env_probe", b"{}", Limits(timeout_s=30, env=(("KPILOT_EXTRA", "given"),)))
    assert out.status == "ok", out.stderr_tail
    env = json.loads(out.result or b"{}")["env"]
    assert "KPILOT_TEST_SECRET" not in env
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert "hunter2" not in json.dumps(env)
    assert env["CUDA_VISIBLE_DEVICES"] == ""  # Limits.gpu=None: no GPU visible, whatever the caller had
    assert env["KPILOT_EXTRA"] == "given"
    assert "TRITON_INTERPRET" not in env
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(Path(__file__).resolve().parents[2])


def test_interpret_and_gpu_limits_reach_the_worker() -> None:
    out = run_worker(W + "env_probe", b"{}", Limits(timeout_s=30, interpret=True, gpu=1))
    env = json.loads(out.result or b"{}")["env"]
    assert env["TRITON_INTERPRET"] == "1"
    assert env["CUDA_VISIBLE_DEVICES"] == "1"


def test_scratch_dir_is_the_cwd_and_is_removed_afterwards() -> None:
    out = run_worker(W + "env_probe", b"{}", Limits(timeout_s=30))
    assert out.status == "ok", out.stderr_tail
    got = json.loads(out.result or b"{}")
    scratch = Path(got["scratch"])
    assert Path(got["cwd"]).resolve() == scratch.resolve()
    assert got["env"]["TMPDIR"] == str(scratch)
    assert got["env"]["TRITON_CACHE_DIR"].startswith(str(scratch))
    assert not scratch.exists(), "the worker's scratch dir (with files and a subdir) was left behind"


def test_scratch_dir_is_removed_after_a_crash_and_a_timeout_too() -> None:
    for module, limits in (("segfault", Limits(timeout_s=30)), ("hang", Limits(timeout_s=1))):
        out = run_worker(W + module, b"{}", limits)
        assert out.status in ("crashed", "timeout")
        match = re.search(r"scratch=(\S+)", out.stdout_tail)
        assert match, out.stdout_tail
        assert not Path(match.group(1)).exists(), f"{module}: scratch dir left behind"


def test_stdout_and_stderr_noise_do_not_corrupt_the_result() -> None:
    out = run_worker(W + "noisy", json.dumps({"question": "ab"}).encode(), Limits(timeout_s=30))
    assert out.status == "ok", out.stderr_tail
    assert json.loads(out.result or b"{}") == {"answer": "abab"}
    assert "after the result" in out.stdout_tail
    assert len(out.stdout_tail) <= 8000  # tails are bounded however much the worker prints
    assert "from stderr" in out.stderr_tail


def test_a_worker_that_wrote_its_result_and_exited_0_is_ok_despite_an_oom_it_logged() -> None:
    # H200 run 14: inductor's max-autotune logged OOMs of template choices it skipped; the sandbox called
    # the five finished GEMM baselines "out_of_memory" and dropped their results.
    out = run_worker(W + "handled_oom", json.dumps({"question": "q"}).encode(), Limits(timeout_s=30))
    assert out.status == "ok", out.stderr_tail
    assert json.loads(out.result or b"{}") == {"answer": "q"} and "OutOfMemoryError" in out.stderr_tail


def test_background_processes_left_by_a_clean_exit_are_killed() -> None:
    # tests/security/test_sandbox_attacks.py leaves 50; one here keeps this file's contract in view.
    marker = f"kpilot-bg-{uuid.uuid4().hex}"
    box: list[SandboxOutcome] = []
    thread = threading.Thread(target=lambda: box.append(run_worker(
        "tests.security.attacks.linger", json.dumps({"marker": marker, "count": 1}).encode(),
        Limits(timeout_s=60))))
    thread.start()
    try:
        child = wait_for(marker, 1, timeout_s=30)
        worker = wait_for("tests.security.attacks.linger", 1, timeout_s=10, uid=SANDBOX_UID)
        assert len(child) == 1 and len(worker) == 1, (child, worker)
        fds = [os.pidfd_open(child[0])]
        os.kill(worker[0], signal.SIGUSR1)  # now exit cleanly, the child still running
    finally:
        thread.join(timeout=60)
    assert box[0].status == "ok", box[0].stderr_tail
    assert still_alive_after(fds, timeout_s=10) == 0, "a process the worker left behind outlived it"


def test_a_cache_dir_shared_through_limits_env_is_writable_and_outlives_the_worker(tmp_path: Path) -> None:
    # benchmarks/exhaustive.py shares one Triton cache between a sweep's workers via Limits.env.
    cache = tmp_path / "triton-cache"
    out = run_worker(W + "cache_write", b"{}", Limits(timeout_s=30, env=(("TRITON_CACHE_DIR", str(cache)),)))
    assert out.status == "ok", out.stderr_tail
    entry = Path(json.loads(out.result or b"{}")["entry"])
    assert entry.is_relative_to(cache) and entry.read_bytes() == b"cubin bytes"
    again = run_worker(W + "cache_write", b"{}", Limits(timeout_s=30, env=(("TRITON_CACHE_DIR", str(cache)),)))
    assert again.status == "ok", again.stderr_tail  # a second worker finds and rewrites the entry


def test_a_system_dir_is_never_handed_to_the_sandbox_as_writable() -> None:
    for bad in ("/", "/etc", str(Path(__file__).resolve().parents[2])):
        with pytest.raises(ValueError, match="fresh directory of your own"):
            run_worker(W + "env_probe", b"{}", Limits(timeout_s=30), writable=(bad,))


def test_a_harness_names_the_extra_packages_its_worker_imports(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The checkout's `tests/` is outside a services worker's view unless the caller (a benchmark's shim,
    never a tool request) names it: H200 run r30 lost every ncu case to "No module named 'tests'". A
    checkout dir on the runner's sys.path (pytest or a benchmark puts tests/ there; CI's full run did) is
    not part of the Python env and is not bound either."""
    monkeypatch.syspath_prepend(str(repo_root() / "tests"))
    task = tmp_path / "shim_task.py"
    task.write_text("import tests.decomposer.corpus  # noqa: F401\n")
    req = json.dumps({"path": str(task)}).encode()
    hidden = run_worker("services.toolrunner.worker_lib.load_task", req, Limits(timeout_s=120), writable=(tmp_path,))
    shown = run_worker("services.toolrunner.worker_lib.load_task", req, Limits(timeout_s=120), writable=(tmp_path,),
                       packages=("tests",))
    assert "No module named 'tests'" in json.dumps(json.loads(hidden.result or b"{}")), hidden
    assert "No module named 'tests'" not in json.dumps(json.loads(shown.result or b"{}")), shown
