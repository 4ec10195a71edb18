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

from shared.bus import Bus, BusError
from shared.natsserver import EmbeddedServer, NatsServerError, port_open
from shared.provision import provision
from shared.service import Health, health_subject
from shared.subjects import SERVICE_NAMES

ROOT = Path(__file__).resolve().parents[2]


class StackState(msgspec.Struct):
    """What `up` started on a port, so that `down` can stop exactly that."""

    port: int
    nats_pid: int
    services: dict[str, int]
    log_dir: str
    llm_pid: int = 0  # the local model server `up --llm` started (0: none)


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


async def wait_healthy(url: str, services: tuple[str, ...], timeout_s: float) -> dict[str, Health]:
    bus = await Bus.connect(url, "kpilot")
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
       llm_port: int | None = None) -> int:
    state_dir = state_dir.resolve()
    path = state_file(state_dir, port)
    if path.exists():
        st = msgspec.json.decode(path.read_bytes(), type=StackState)
        if _alive(st.nats_pid) and all(_alive(p) for p in st.services.values()):
            print(f"kpilot: the stack is already up on 127.0.0.1:{port} (state in {state_dir})")
            return 0
        print(f"kpilot: stale stack state on port {port}; stopping its leftovers first")
        down(state_dir, port)
    server = EmbeddedServer(state_dir, port=port)
    try:
        server.start(detach=True)
    except NatsServerError as e:
        print(f"kpilot up: {e}", file=sys.stderr)
        return 1
    assert server.proc is not None
    operator = f"nats://127.0.0.1:{port}"

    async def _provision() -> list[str]:
        bus = await Bus.connect(server.url("operator"), "kpilot")
        try:
            return await provision(bus.js)
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
    llm_env: dict[str, str] = {}
    llm_pid = 0
    if llm_port is not None:  # the local model server first: the planner starts pointed at it
        from services.kpilot import llm_server
        try:
            srv = llm_server.start(log_dir / f"llm-{port}.log", llm_port)
        except ValueError as e:
            server.stop()
            print(f"kpilot up --llm: {e}", file=sys.stderr)
            return 1
        llm_env, llm_pid = srv.env(), srv.pid
        print(f"kpilot: llama.cpp server on {srv.url} ({srv.model.alias}, sha256 {srv.model.sha256[:12]})")
    for name in services:
        log = open(log_dir / f"{name}-{port}.log", "ab")  # noqa: SIM115 - the child keeps writing it
        extra = ["--period", f"{telemetry_period_s:g}"] if name == "telemetry" and telemetry_period_s else []
        proc = subprocess.Popen([sys.executable, "-m", f"services.{name}", "--nats", server.url(name), *extra],
                                cwd=ROOT, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                start_new_session=True,
                                env=os.environ | {"KPILOT_STATE": str(state_dir)} | llm_env)
        log.close()
        pids[name] = proc.pid
    st = StackState(port=port, nats_pid=server.proc.pid, services=pids, log_dir=str(log_dir), llm_pid=llm_pid)
    path.write_bytes(msgspec.json.encode(st))
    healthy = asyncio.run(wait_healthy(operator, services, timeout_s))
    missing = [n for n in services if n not in healthy]
    if missing:
        print(f"kpilot up: not healthy within {timeout_s:.0f} s: {', '.join(missing)}; see their logs in "
              f"{log_dir}", file=sys.stderr)
        down(state_dir, port)
        return 1
    print(f"kpilot: NATS on {operator} (JetStream in {state_dir / 'jetstream'}; "
          f"{len(changed)} provisioning changes); {len(services)} services healthy: {', '.join(services)}")
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
    _terminate(st.nats_pid, 10.0)
    if st.llm_pid:
        _terminate(st.llm_pid, 10.0)
    path.unlink()
    print(f"kpilot: stopped {len(st.services)} services and NATS on port {port}")
    return 0


async def check_bus(url: str) -> None:
    """Raise BusError with a fix when nothing answers at `url`."""
    bus = await Bus.connect(url, "kpilot")
    await bus.close()


__all__ = ["BusError", "check_bus", "down", "up", "wait_healthy"]
