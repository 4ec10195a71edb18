"""The stack's supervisor: starts nats-server and one process per service, and restarts whichever dies,
with back-off, until `kpilot down` (SIGTERM) stops them all.

`kpilot up` runs it as its own process (`python -m services.kpilot.supervisor`, a new session), so the
stack outlives the terminal; what it sees is written to the stack's state file after every change
(`stack-<port>.json`: each child's pid, restarts and last exit status) and `kpilot status` shows it.
A service restarted this way resumes from its durable consumers; a message it held unacked comes back
after the bus's ack wait (30 s), so nothing it was doing is lost.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

import msgspec

from services.kpilot.stack import (
    NATS,
    ChildState,
    StackState,
    provision_streams,
    service_command,
    state_file,
)
from shared.natscluster import EmbeddedCluster
from shared.natsserver import EmbeddedServer, NatsServerError
from shared.subjects import SERVICE_NAMES

# Restart delays (s) after each consecutive death; a child that ran STABLE_S is forgiven its deaths.
# A crash-looping service (bad config) costs one start per 30 s instead of a core.
BACKOFF_S: tuple[float, ...] = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
STABLE_S = 60.0
POLL_S = 0.1


class Supervisor:
    def __init__(self, state_dir: Path, port: int, services: tuple[str, ...],
                 telemetry_period_s: float | None, *, tls: bool = False, cluster: int = 0) -> None:
        self.state_dir, self.port, self.services = state_dir, port, services
        self.telemetry_period_s = telemetry_period_s
        self.log_dir = state_dir / "logs"
        # A cluster's members are started once and not restarted here: the cluster survives a lost
        # member (a majority keeps quorum), and natscluster.restart_member brings one back.
        self.cluster = EmbeddedCluster(state_dir, size=cluster, port=port) if cluster else None
        self.server: EmbeddedServer | EmbeddedCluster = self.cluster or EmbeddedServer(state_dir, port=port,
                                                                                        tls=tls)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.started: dict[str, float] = {}
        self.streak: dict[str, int] = {}  # consecutive short-lived runs
        self.state = StackState(port=port, nats_pid=0, services={}, log_dir=str(self.log_dir),
                                supervisor_pid=os.getpid(), phase="starting", http_port=self.server.http_port,
                                tls_ca=self.server.tls.ca if self.server.tls else "")
        self.stopping = False

    # ------------------------------------------------------------ state file

    def save(self) -> None:
        if NATS in self.state.children:
            self.state.nats_pid = self.state.children[NATS].pid
        self.state.services = {n: c.pid for n, c in self.state.children.items() if n != NATS}
        path = state_file(self.state_dir, self.port)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(msgspec.json.encode(self.state))
        tmp.replace(path)  # `kpilot status` never reads half a file

    # ------------------------------------------------------------ children

    def _start(self, name: str) -> None:
        if name == NATS:
            assert isinstance(self.server, EmbeddedServer)
            self.server.proc = None
            self.server.start(detach=False)
            assert self.server.proc is not None
            proc = self.server.proc
        else:
            argv, env = service_command(self.server, name, self.state_dir, self.telemetry_period_s)
            with open(self.log_dir / f"{name}-{self.port}.log", "ab") as log:
                proc = subprocess.Popen(argv, cwd=Path(__file__).resolve().parents[2], stdout=log, stderr=log,
                                        stdin=subprocess.DEVNULL, env=env)
        self.procs[name] = proc
        self.started[name] = time.monotonic()
        child = self.state.children.setdefault(name, ChildState(pid=proc.pid))
        child.pid, child.next_start_at = proc.pid, None
        self.save()

    def start_all(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if self.cluster is not None:
            self.cluster.start(detach=True)
            self.cluster.write_state(self.port)
            assert self.cluster.proc is not None
            self.state.nats_pid = self.cluster.proc.pid
        else:
            self._start(NATS)
        changed = asyncio.run(provision_streams(self.server, replicas=self.cluster.size if self.cluster else 1))
        self.state.provisioned = len(changed)
        for name in self.services:
            self._start(name)
        self.state.phase = "running"
        self.save()

    def _reap(self, name: str, code: int) -> None:
        child = self.state.children[name]
        ran = time.monotonic() - self.started[name]
        self.streak[name] = 0 if ran >= STABLE_S else self.streak.get(name, 0) + 1
        delay = BACKOFF_S[min(self.streak[name], len(BACKOFF_S)) - 1] if self.streak[name] else BACKOFF_S[0]
        child.restarts += 1
        child.last_exit, child.last_exit_at = code, time.time()
        child.next_start_at = time.time() + delay
        print(f"supervisor: {name} (pid {child.pid}) exited with {code} after {ran:.1f} s; restart "
              f"{child.restarts} in {delay:g} s", flush=True)
        self.procs.pop(name)
        self.save()

    def watch(self) -> None:
        """Until SIGTERM: reap dead children and start them again when their back-off is over."""
        while not self.stopping:
            for name, proc in list(self.procs.items()):
                code = proc.poll()
                if code is not None:
                    self._reap(name, code)
            now = time.time()
            for name, child in self.state.children.items():
                if name not in self.procs and child.next_start_at is not None and now >= child.next_start_at:
                    try:
                        self._start(name)
                    except (NatsServerError, OSError) as e:  # port still held, binary gone: later
                        print(f"supervisor: restarting {name} failed: {e}", flush=True)
                        child.next_start_at = now + BACKOFF_S[-1]
                        self.save()
            time.sleep(POLL_S)

    def stop_all(self) -> None:
        """Services first (they drain while NATS is still there), then nats-server."""
        for name in [n for n in self.procs if n != NATS] + ([NATS] if NATS in self.procs else []):
            proc = self.procs[name]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(10.0)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if self.cluster is not None:
            self.cluster.stop()
        state_file(self.state_dir, self.port).unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m services.kpilot.supervisor")
    p.add_argument("--state-dir", type=Path, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--services", default=",".join(SERVICE_NAMES))
    p.add_argument("--telemetry-period", type=float)
    p.add_argument("--tls", action="store_true")
    p.add_argument("--cluster", type=int, default=0)
    a = p.parse_args(argv)
    sup = Supervisor(a.state_dir.resolve(), a.port, tuple(s for s in a.services.split(",") if s),
                     a.telemetry_period, tls=a.tls, cluster=a.cluster)

    def _stop(*_: object) -> None:
        sup.stopping = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        sup.start_all()
    except Exception as e:  # noqa: BLE001 - reported to `kpilot up` through the state file
        sup.state.phase, sup.state.error = "failed", f"{type(e).__name__}: {e}"
        sup.save()
        sup.stopping = True
        for proc in sup.procs.values():
            proc.kill()
        traceback.print_exc()  # the cause in full in the supervisor's log; `kpilot up` prints its end
        print(f"supervisor: start failed: {sup.state.error}", file=sys.stderr, flush=True)
        return 1
    print(f"supervisor: {len(sup.services)} services and nats-server on {a.port} started", flush=True)
    sup.watch()
    sup.stop_all()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
