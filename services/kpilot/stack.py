"""`kpilot up` / `kpilot down`: the embedded nats-server and one process per service, started and kept
running by the stack's supervisor (services/kpilot/supervisor.py), which restarts what dies."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from shared import natscluster
from shared.bus import Bus, BusError
from shared.natsauth import CA_ENV, CREDS_ENV, make_tls
from shared.natsserver import EmbeddedServer, port_open
from shared.provision import provision
from shared.service import Health, health_subject
from shared.signing import SIGNING_KEY_ENV, make_keypair, publish_trusted_key
from shared.subjects import SERVICE_NAMES

ROOT = Path(__file__).resolve().parents[2]


NATS = "nats-server"  # the supervisor's name for the server among its children


class ChildState(msgspec.Struct):
    """One supervised process as `kpilot status` shows it."""

    pid: int
    restarts: int = 0
    last_exit: int | None = None  # exit status of its last death; negative: killed by that signal (-9)
    last_exit_at: float | None = None  # epoch seconds
    next_start_at: float | None = None  # set while it waits out its restart back-off


class StackState(msgspec.Struct):
    """What `up` started on a port, so that `down` can stop exactly that; rewritten by the supervisor
    after every start, death and restart."""

    port: int
    nats_pid: int
    services: dict[str, int]
    log_dir: str
    http_port: int = 0  # nats-server's HTTP monitor, on 127.0.0.1 only (a cluster: its first member's)
    tls_ca: str = ""  # the CA clients need when the stack runs with --tls
    supervisor_pid: int = 0
    phase: str = "running"  # starting | running | failed
    error: str = ""
    provisioned: int = 0  # provisioning changes at the first start
    children: dict[str, ChildState] = {}


def read_state(state_dir: Path, port: int) -> StackState | None:
    path = state_file(state_dir.resolve(), port)
    try:
        return msgspec.json.decode(path.read_bytes(), type=StackState)
    except (FileNotFoundError, msgspec.DecodeError, msgspec.ValidationError):
        return None


Server = EmbeddedServer | natscluster.EmbeddedCluster


def service_command(server: Server, name: str, state_dir: Path,
                    telemetry_period_s: float | None) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of one service process of the stack. No secret on the command
    line (`ps` shows it): the password is in a 0600 creds file, the critic's signing key in a 0600 file."""
    extra = ["--period", f"{telemetry_period_s:g}"] if name == "telemetry" and telemetry_period_s else []
    env = os.environ | {"KPILOT_STATE": str(state_dir), CREDS_ENV: str(server.creds_file(name))}
    env.pop(SIGNING_KEY_ENV, None)
    env.pop(CA_ENV, None)
    if name == "critic":
        env[SIGNING_KEY_ENV] = str(make_keypair(state_dir / "signing")[0])
    if server.tls:
        env[CA_ENV] = server.tls.ca
    return [sys.executable, "-m", f"services.{name}", "--nats", server.plain_url(), *extra], env


async def provision_streams(server: Server, replicas: int = 1) -> list[str]:
    """Every stream, bucket and object store (as admin, in-process: the password is on no command line),
    and the critic's public key in the `trust` bucket."""
    bus = await Bus.connect(server.url("admin"), "kpilot-provision",
                            tls_ca=server.tls.ca if server.tls else None)
    try:
        changed = await provision(bus.js, replicas=replicas)
        _, pub = make_keypair(server.state_dir / "signing")
        await publish_trusted_key(bus.js, pub.read_bytes().strip())
        return changed
    finally:
        await bus.close()


def llm_pid_file(state_dir: Path, port: int) -> Path:
    """The pid of the local model server `up --llm` started (services/kpilot/llm_server.py)."""
    return state_dir / f"llm-{port}.pid"


def state_file(state_dir: Path, port: int) -> Path:
    return state_dir / f"stack-{port}.json"


def _alive(pid: int) -> bool:
    if pid <= 0:  # 0 / -1 would name a process group, never one of ours
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def wait_healthy(url: str, services: tuple[str, ...], timeout_s: float,
                       tls_ca: str | None = None) -> dict[str, Health]:
    bus = await Bus.connect(url, "kpilot", tls_ca=tls_ca)
    healthy: dict[str, Health] = {}
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and len(healthy) < len(services):
            for name in services:
                if name in healthy:
                    continue
                try:
                    reply = await bus.nc.request(health_subject(name), b"", timeout=0.5)
                    h = msgspec.json.decode(reply.data, type=Health)
                    if h.healthy:
                        healthy[name] = h
                except Exception:  # noqa: BLE001, S110 - not up yet (no responder, timeout): ask again
                    pass
            await asyncio.sleep(0.2)
    finally:
        await bus.close()
    return healthy


def up(state_dir: Path, port: int, *, detach: bool, timeout_s: float = 120.0,
       services: tuple[str, ...] = SERVICE_NAMES, telemetry_period_s: float | None = None,
       tls: bool = False, cluster: int = 0, llm_port: int | None = None) -> int:
    """`cluster` N >= 3: N nats-servers with routes (shared/natscluster.py), everything at N replicas."""
    state_dir = state_dir.resolve()
    st = read_state(state_dir, port)
    if st is not None:
        if _alive(st.supervisor_pid) and st.phase == "running":
            print(f"kpilot: the stack is already up on 127.0.0.1:{port} (state in {state_dir})")
            return 0
        print(f"kpilot: stale stack state on port {port}; stopping its leftovers first")
        down(state_dir, port)
    if cluster and tls:
        print("kpilot up: --tls with --cluster is not supported yet. Fix: drop one of them.", file=sys.stderr)
        return 2
    try:
        # The critic's Ed25519 key pair: private key 0600 for the critic alone, public key in the
        # `trust` bucket (admin-written) and beside it in signing/critic.pub for subscribers.
        state_dir.mkdir(parents=True, exist_ok=True)
        make_keypair(state_dir / "signing")
        if tls:  # the CA and server certificate now, so a missing `cryptography` is reported here
            make_tls(state_dir / "tls", ("127.0.0.1", "localhost"))
    except ImportError as e:
        print(f"kpilot up: {e}: patch signing and --tls need the `cryptography` package. Fix: "
              f"`pip install 'cryptography>=43'` (or `make install`).", file=sys.stderr)
        return 1
    try:
        if cluster:
            natscluster.EmbeddedCluster(state_dir, size=cluster, port=port)  # refuses a bad size now
    except ValueError as e:
        print(f"kpilot up: {e}", file=sys.stderr)
        return 2
    busy = [p for p in range(port, port + max(cluster, 1)) if port_open("127.0.0.1", p)]
    if busy:
        print(f"kpilot up: port {busy[0]} on 127.0.0.1 is already in use. Fix: stop what runs there "
              f"(`kpilot down --port {port}`) or pass `--port` with a free port.", file=sys.stderr)
        return 1
    state_dir.mkdir(parents=True, exist_ok=True)
    log_dir = state_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "services.kpilot.supervisor", "--state-dir", str(state_dir), "--port",
            str(port), "--services", ",".join(services)]
    if telemetry_period_s:
        argv += ["--telemetry-period", f"{telemetry_period_s:g}"]
    if tls:
        argv += ["--tls"]
    if cluster:
        argv += ["--cluster", str(cluster)]
    llm_env: dict[str, str] = {}
    if llm_port is not None:  # the local model server first: the planner starts pointed at it
        from services.kpilot import llm_server
        try:
            srv = llm_server.start(log_dir / f"llm-{port}.log", llm_port)
        except ValueError as e:
            print(f"kpilot up --llm: {e}", file=sys.stderr)
            return 1
        llm_env = srv.env()
        llm_pid_file(state_dir, port).write_text(str(srv.pid))
        print(f"kpilot: llama.cpp server on {srv.url} ({srv.model.alias}, sha256 {srv.model.sha256[:12]})")
    with open(log_dir / f"supervisor-{port}.log", "ab") as log:
        sup = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                               start_new_session=True, env=os.environ | llm_env)
    deadline = time.monotonic() + timeout_s
    while (st := read_state(state_dir, port)) is None or st.phase == "starting":
        if sup.poll() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if st is None or st.phase != "running":
        sup_log = log_dir / f"supervisor-{port}.log"
        if st is not None and st.phase != "starting":  # it wrote its failure and is exiting: its log is
            with contextlib.suppress(subprocess.TimeoutExpired):  # complete once it has exited
                sup.wait(timeout=10)
        why = st.error if st is not None and st.error else (
            f"the supervisor exited with {sup.returncode}" if sup.poll() is not None
            else f"not running within {timeout_s:.0f} s")
        print(f"kpilot up: the stack did not start: {why}. The supervisor's log ({sup_log}) ends:",
              file=sys.stderr)
        print(_tail(sup_log, 30), file=sys.stderr)
        down(state_dir, port)
        return 1
    scheme = "tls" if tls else "nats"
    operator = ",".join(f"{scheme}://127.0.0.1:{port + i}" for i in range(max(cluster, 1)))
    healthy = asyncio.run(wait_healthy(operator, services, max(deadline - time.monotonic(), 5.0),
                                       tls_ca=st.tls_ca or None))
    missing = [n for n in services if n not in healthy]
    if missing:
        print(f"kpilot up: not healthy within {timeout_s:.0f} s: {', '.join(missing)}; see their logs in "
              f"{log_dir}", file=sys.stderr)
        down(state_dir, port)
        return 1
    print(f"kpilot: NATS on {operator} (JetStream in {state_dir}; "
          f"{st.provisioned} provisioning changes); {len(services)} services healthy: {', '.join(services)}; "
          f"supervised (pid {st.supervisor_pid}): a service that dies is restarted, `kpilot status` shows restarts")
    print(f"kpilot: monitor on http://127.0.0.1:{st.http_port} (loopback only)"
          + (f"; TLS: clients need --tls-ca {st.tls_ca} (or {CA_ENV})" if st.tls_ca else ""))
    if detach:
        return 0
    print("kpilot: running in the foreground; Ctrl-C stops everything")
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    except KeyboardInterrupt:
        pass
    return down(state_dir, port)


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError as e:
        return f"  (unreadable: {e})"
    return "\n".join(f"  {line}" for line in text[-lines:]) or "  (empty)"


def _terminate(pid: int, timeout_s: float) -> None:
    if not _alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:  # reap if it is our child, else just poll
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return
        except ChildProcessError:
            if not _alive(pid):
                return
        time.sleep(0.05)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)


def down(state_dir: Path, port: int) -> int:
    path = state_file(state_dir.resolve(), port)
    if not path.exists():
        if port_open("127.0.0.1", port):
            print(f"kpilot down: something listens on {port} but this state dir ({state_dir}) did not "
                  f"start it; pass the --state-dir that `up` used", file=sys.stderr)
            return 1
        print(f"kpilot: nothing running on port {port}")
        return 0
    st = msgspec.json.decode(path.read_bytes(), type=StackState)
    # The supervisor stops its children itself (services, then NATS); what outlives it (it was killed)
    # is stopped here from the last pids it wrote.
    _terminate(st.supervisor_pid, 40.0)
    st = read_state(state_dir, port) or st
    for pid in st.services.values():
        _terminate(pid, 10.0)
    for pid in natscluster.member_pids(state_dir.resolve(), port) or [st.nats_pid]:  # a cluster: every member
        _terminate(pid, 10.0)
    natscluster.servers_file(state_dir.resolve(), port).unlink(missing_ok=True)
    path.unlink(missing_ok=True)
    llm = llm_pid_file(state_dir.resolve(), port)
    if llm.exists():
        _terminate(int(llm.read_text()), 10.0)
        llm.unlink()
    print(f"kpilot: stopped {len(st.services)} services and NATS on port {port}")
    return 0


async def check_bus(url: str) -> None:
    """Raise BusError with a fix when nothing answers at `url`."""
    bus = await Bus.connect(url, "kpilot")
    await bus.close()


__all__ = ["BusError", "check_bus", "down", "read_state", "up", "wait_healthy"]


