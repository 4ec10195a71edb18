"""`kpilot up` / `kpilot down`: the embedded nats-server and one process per service."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from shared import natscluster
from shared.bus import Bus, BusError
from shared.natsauth import CA_ENV, CREDS_ENV
from shared.natsserver import EmbeddedServer, NatsServerError, port_open
from shared.provision import provision
from shared.service import Health, health_subject
from shared.signing import SIGNING_KEY_ENV, make_keypair, publish_trusted_key
from shared.subjects import SERVICE_NAMES

ROOT = Path(__file__).resolve().parents[2]


class StackState(msgspec.Struct):
    """What `up` started on a port, so that `down` can stop exactly that."""

    port: int
    nats_pid: int
    services: dict[str, int]
    log_dir: str
    http_port: int = 0  # nats-server's HTTP monitor, on 127.0.0.1 only
    tls_ca: str = ""  # the CA clients need when the stack runs with --tls


def state_file(state_dir: Path, port: int) -> Path:
    return state_dir / f"stack-{port}.json"


def _alive(pid: int) -> bool:
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
       tls: bool = False, cluster: int = 0) -> int:
    """`cluster` N >= 3: N nats-servers with routes (shared/natscluster.py), everything at N replicas."""
    state_dir = state_dir.resolve()
    path = state_file(state_dir, port)
    if path.exists():
        st = msgspec.json.decode(path.read_bytes(), type=StackState)
        if _alive(st.nats_pid) and all(_alive(p) for p in st.services.values()):
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
        signing_key, signing_pub = make_keypair(state_dir / "signing")
        server = natscluster.EmbeddedCluster(state_dir, size=cluster, port=port) if cluster else \
            EmbeddedServer(state_dir, port=port, tls=tls)
    except ImportError as e:
        print(f"kpilot up: {e}: patch signing and --tls need the `cryptography` package. Fix: "
              f"`pip install 'cryptography>=43'` (or `make install`).", file=sys.stderr)
        return 1
    try:
        server.start(detach=True)
    except NatsServerError as e:
        print(f"kpilot up: {e}", file=sys.stderr)
        return 1
    assert server.proc is not None
    operator = server.plain_url()
    ca = server.tls.ca if server.tls else ""

    async def _provision() -> list[str]:
        # In-process, so the password is on no command line.
        bus = await Bus.connect(server.url("admin"), "kpilot-provision", tls_ca=ca or None)
        try:
            changed = await provision(bus.js, replicas=max(cluster, 1))
            await publish_trusted_key(bus.js, signing_pub.read_bytes().strip())
            return changed
        finally:
            await bus.close()

    try:
        changed = asyncio.run(_provision())
    except Exception as e:  # noqa: BLE001 - any failure stops the server and is reported with its fix
        server.stop()
        print(f"kpilot up: provisioning the streams failed: {e}. Fix: check the table in "
              f"shared/subjects.py against the server limits in deploy/nats-server.conf.template",
              file=sys.stderr)
        return 1
    log_dir = state_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    pids: dict[str, int] = {}
    for name in services:
        log = open(log_dir / f"{name}-{port}.log", "ab")  # noqa: SIM115 - the child keeps writing it
        extra = ["--period", f"{telemetry_period_s:g}"] if name == "telemetry" and telemetry_period_s else []
        # No secret on the command line (`ps` shows it): the password is in a 0600 creds file.
        env = os.environ | {"KPILOT_STATE": str(state_dir), CREDS_ENV: str(server.creds_file(name))}
        env = env | {SIGNING_KEY_ENV: str(signing_key)} if name == "critic" else \
            {k: v for k, v in env.items() if k != SIGNING_KEY_ENV}
        env = env | {CA_ENV: ca} if ca else {k: v for k, v in env.items() if k != CA_ENV}
        proc = subprocess.Popen([sys.executable, "-m", f"services.{name}", "--nats", operator, *extra],
                                cwd=ROOT, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)
        log.close()
        pids[name] = proc.pid
    if isinstance(server, natscluster.EmbeddedCluster):
        server.write_state(port)
    st = StackState(port=port, nats_pid=server.proc.pid, services=pids, log_dir=str(log_dir),
                    http_port=server.http_port, tls_ca=ca)
    path.write_bytes(msgspec.json.encode(st))
    healthy = asyncio.run(wait_healthy(operator, services, timeout_s, tls_ca=ca or None))
    missing = [n for n in services if n not in healthy]
    if missing:
        print(f"kpilot up: not healthy within {timeout_s:.0f} s: {', '.join(missing)}; see their logs in "
              f"{log_dir}", file=sys.stderr)
        down(state_dir, port)
        return 1
    print(f"kpilot: NATS on {','.join(f'nats://127.0.0.1:{port + i}' for i in range(max(cluster, 1)))} "
          f"(JetStream in {state_dir}; "
          f"{len(changed)} provisioning changes); {len(services)} services healthy: {', '.join(services)}")
    print(f"kpilot: monitor on http://127.0.0.1:{server.http_port} (loopback only)"
          + (f"; TLS: clients need --tls-ca {ca} (or {CA_ENV})" if ca else ""))
    if detach:
        return 0
    print("kpilot: running in the foreground; Ctrl-C stops everything")
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    except KeyboardInterrupt:
        pass
    return down(state_dir, port)


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
    for pid in st.services.values():  # services first, so they drain while NATS is still there
        _terminate(pid, 10.0)
    for pid in natscluster.member_pids(state_dir.resolve(), port) or [st.nats_pid]:  # a cluster: every member
        _terminate(pid, 10.0)
    natscluster.servers_file(state_dir.resolve(), port).unlink(missing_ok=True)
    path.unlink()
    print(f"kpilot: stopped {len(st.services)} services and NATS on port {port}")
    return 0


async def check_bus(url: str) -> None:
    """Raise BusError with a fix when nothing answers at `url`."""
    bus = await Bus.connect(url, "kpilot")
    await bus.close()


__all__ = ["BusError", "check_bus", "down", "stack_info", "up", "wait_healthy"]


def stack_info(state_dir: Path, port: int) -> StackState | None:
    """What `up` recorded for the stack on `port` (monitor port, TLS CA), or None."""
    path = state_file(state_dir.resolve(), port)
    return msgspec.json.decode(path.read_bytes(), type=StackState) if path.exists() else None
