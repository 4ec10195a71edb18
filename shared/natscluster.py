"""Clustered JetStream on loopback, the way NATS runs in production: N nats-servers joined by routes (a
`cluster {}` block in each rendered config), one JetStream store per server, every stream and bucket at N
replicas (shared/provision.py), and clients given the whole server list.

    cluster = EmbeddedCluster(state_dir, size=3, port=4222)   # client ports 4222, 4223, 4224
    cluster.start(detach=True)
    url = cluster.url("planner")   # "nats://planner:PW@127.0.0.1:4222,nats://planner:PW@127.0.0.1:4223,..."

The same permission table renders the deploy files' server users (`env_users`), with each password an
environment reference that nats-server resolves at start (`$KPILOT_PW_PLANNER`), so no secret is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import time
from pathlib import Path

import msgspec
import nats.errors
import nats.js.errors
from nats.js import JetStreamContext

from shared.natsauth import write_secret
from shared.natsserver import (
    EmbeddedServer,
    NatsServerError,
    find_binary,
    free_port,
    port_open,
    render_config,
    user_block,
)
from shared.subjects import KV_BUCKETS, OBJECT_STORES, STREAMS, USERS, permissions

CLUSTER_NAME = "kpilot"


class ServerInfo(msgspec.Struct, kw_only=True):
    """One server of a stack, as `kpilot status` shows it."""

    name: str
    url: str  # client URL, no credentials
    pid: int | None = None
    cluster_port: int | None = None
    http_port: int | None = None
    up: bool = False
    leader_of: list[str] = []  # streams (KV buckets and object stores are streams KV_x / OBJ_x)


class ClusterState(msgspec.Struct):
    """The servers `up --cluster N` started, beside the stack state (stack-<port>.json)."""

    servers: list[ServerInfo]


def servers_file(state_dir: Path, port: int) -> Path:
    return state_dir / f"servers-{port}.json"


def password_env(service: str) -> str:
    return f"KPILOT_PW_{service.upper()}"


def env_users() -> list[dict[str, object]]:
    """Every user of the permission table with its password as an environment reference (deploy files)."""
    users: list[dict[str, object]] = []
    for name in USERS:
        perm = permissions(name)
        pub: dict[str, object] = {"allow": list(perm.publish)}
        sub: dict[str, object] = {"allow": list(perm.subscribe)}
        if perm.publish_deny:
            pub["deny"] = list(perm.publish_deny)
        if perm.subscribe_deny:
            sub["deny"] = list(perm.subscribe_deny)
        rules: dict[str, object] = {"publish": pub, "subscribe": sub}
        if perm.allow_responses:
            rules["allow_responses"] = True
        users.append({"user": name, "password": f"${password_env(name)}", "permissions": rules})
    return users


def cluster_block(*, host: str, cluster_port: int, routes: list[str]) -> str:
    lines = ",\n".join(f"    {json.dumps(r)}" for r in routes)
    return (f"\ncluster {{\n  name: {CLUSTER_NAME}\n  listen: {host}:{cluster_port}\n"
            f"  routes: [\n{lines}\n  ]\n}}\n")


def stream_names() -> list[str]:
    """Every stream the table provisions, KV buckets and object stores by their backing stream's name."""
    return ([s.name for s in STREAMS] + [f"KV_{b.name}" for b in KV_BUCKETS]
            + [f"OBJ_{o.name}" for o in OBJECT_STORES])


class ClusterServer(EmbeddedServer):
    """One member: its own server name, JetStream store and cluster port; routes to every member."""

    def __init__(self, state_dir: Path, *, name: str, port: int, cluster_port: int, routes: list[str],
                 host: str = "127.0.0.1") -> None:
        super().__init__(state_dir, port=port, host=host)
        self.name, self.cluster_port, self.routes = name, cluster_port, routes

    def write_config(self) -> Path:
        store = self.state_dir / f"jetstream-{self.name}"
        store.mkdir(parents=True, exist_ok=True)
        text = render_config(host=self.host, port=self.port, http_port=self.http_port, store_dir=store,
                             creds=self.creds, server_name=self.name)
        write_secret(self.conf_path, (text + cluster_block(host=self.host, cluster_port=self.cluster_port,
                                                            routes=self.routes)).encode())
        check = subprocess.run([str(find_binary()), "-t", "-c", str(self.conf_path)], capture_output=True,
                               text=True, check=False)
        if check.returncode != 0:
            raise NatsServerError(f"nats-server rejected its cluster config {self.conf_path}: "
                                  f"{(check.stderr or check.stdout).strip()}")
        return self.conf_path

    def info(self) -> ServerInfo:
        return ServerInfo(name=self.name, url=f"nats://{self.host}:{self.port}",
                          pid=self.proc.pid if self.proc else None, cluster_port=self.cluster_port,
                          http_port=self.http_port, up=port_open(self.host, self.port))


class EmbeddedCluster:
    """`size` servers on consecutive client ports from `port`, routes between all of them."""

    def __init__(self, state_dir: Path, *, size: int = 3, port: int = 4222, host: str = "127.0.0.1") -> None:
        if size < 3 or size % 2 == 0:
            raise ValueError(f"--cluster {size}: a JetStream cluster needs an odd size of at least 3 (a "
                             f"majority must survive a lost server); use 3 or 5, or leave --cluster out")
        self.state_dir, self.host = state_dir, host
        cports = [free_port() for _ in range(size)]
        routes = [f"nats-route://{host}:{p}" for p in cports]
        self.servers = [ClusterServer(state_dir, name=f"{CLUSTER_NAME}-{i + 1}", port=port + i,
                                      cluster_port=cports[i], routes=routes, host=host)
                        for i in range(size)]

    @property
    def proc(self):  # type: ignore[no-untyped-def]  # the first member's process, for the stack state
        return self.servers[0].proc

    @property
    def size(self) -> int:
        return len(self.servers)

    tls = None  # `kpilot up --tls --cluster` is refused: the members' routes and clients run plain

    @property
    def http_port(self) -> int:  # the first member's monitor (each member has its own)
        return self.servers[0].http_port

    def plain_url(self) -> str:
        """Every member's URL without credentials (services read theirs from a creds file)."""
        return ",".join(s.plain_url() for s in self.servers)

    def creds_file(self, user: str) -> Path:
        return self.servers[0].creds_file(user)

    def url(self, service: str = "operator") -> str:
        """The comma-separated list of every member's URL (shared.bus.connect splits it)."""
        return ",".join(s.url(service) for s in self.servers)

    def start(self, *, detach: bool = False, timeout_s: float = 30.0) -> None:
        started: list[ClusterServer] = []
        try:
            for s in self.servers:
                s.start(detach=detach, timeout_s=timeout_s)
                started.append(s)
            asyncio.run(wait_for_meta_leader(self.url(), timeout_s))
        except BaseException:
            for s in started:
                s.stop()
            raise

    def stop(self) -> None:
        for s in self.servers:
            s.stop()

    def state(self) -> ClusterState:
        return ClusterState(servers=[s.info() for s in self.servers])

    def write_state(self, port: int) -> None:
        servers_file(self.state_dir, port).write_bytes(msgspec.json.encode(self.state()))


def member_pids(state_dir: Path, port: int) -> list[int]:
    """Every server pid the cluster started on `port` recorded (for `kpilot down`); [] for one server."""
    path = servers_file(state_dir, port)
    if not path.exists():
        return []
    return [s.pid for s in msgspec.json.decode(path.read_bytes(), type=ClusterState).servers if s.pid]


async def wait_for_meta_leader(url: str, timeout_s: float) -> None:
    """Return once the cluster's JetStream answers (a meta leader was elected and it has quorum)."""
    from shared.bus import Bus, BusError
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        try:
            bus = await Bus.connect(url, "kpilot")
        except BusError as e:
            last = str(e)
            await asyncio.sleep(0.2)
            continue
        try:
            await bus.js.account_info()
            return
        except Exception as e:  # noqa: BLE001 - no meta leader yet (503, timeout): ask again
            last = repr(e)
        finally:
            await bus.close()
        await asyncio.sleep(0.2)
    raise NatsServerError(f"the NATS cluster elected no JetStream leader within {timeout_s:.0f} s ({last}); "
                          f"see the nats-*.log files in the state dir")


async def stream_leaders(js: JetStreamContext) -> dict[str, str]:
    """Stream name -> the server that leads it now ('' while it has no leader)."""
    leaders: dict[str, str] = {}
    for name in stream_names():
        try:
            info = await js.stream_info(name)
        except (nats.js.errors.NotFoundError, nats.errors.TimeoutError, nats.js.errors.APIError):
            continue
        leaders[name] = (info.cluster.leader or "") if info.cluster else ""
    return leaders


__all__ = ["ClusterState", "EmbeddedCluster", "ServerInfo", "env_users", "servers_file", "stream_leaders"]


def _ports(url: str) -> set[int]:
    ports = set()
    for u in url.split(","):
        hostport = u.rsplit("@", 1)[-1].split("://")[-1].rstrip("/")
        if ":" in hostport:
            ports.add(int(hostport.rsplit(":", 1)[1]))
        else:
            ports.add(4222)
    return ports


def load_servers(state_dir: Path, url: str) -> list[ServerInfo]:
    """The servers a stack in `state_dir` started whose client ports `url` names ([] when none did)."""
    ports = _ports(url)
    for path in sorted(state_dir.glob("servers-*.json")):
        st = msgspec.json.decode(path.read_bytes(), type=ClusterState)
        if ports & {p for s in st.servers for p in _ports(s.url)}:
            return st.servers
    return []


async def servers_status(js: JetStreamContext, url: str, state_dir: Path | None,
                         connected: dict[str, object]) -> list[ServerInfo]:
    """Each server of the stack at `url` with the streams it leads; `connected` is the server's INFO of
    the client's connection (name and port of a single server no servers file describes)."""
    leaders = await stream_leaders(js)
    servers = load_servers(state_dir, url) if state_dir is not None else []
    if not servers:  # one server (the default stack), or one this state dir did not start
        port = int(str(connected.get("port", 0)) or 0)
        pid = None
        if state_dir is not None and (state_dir / f"nats-{port}.pid").exists():
            pid = int((state_dir / f"nats-{port}.pid").read_text())
        servers = [ServerInfo(name=str(connected.get("server_name", "")), url=f"nats://127.0.0.1:{port}",
                              pid=pid, up=True)]
        names = {v for v in leaders.values() if v}
        servers += [ServerInfo(name=n, url="", up=True) for n in sorted(names - {servers[0].name})]
    out = []
    for s in servers:
        up = bool(s.url) and port_open("127.0.0.1", next(iter(_ports(s.url))))
        out.append(msgspec.structs.replace(
            s, up=up, leader_of=sorted(name for name, leader in leaders.items() if leader == s.name)))
    return out


DEPLOY_CONF = Path(__file__).resolve().parents[1] / "deploy" / "nats" / "kpilot.conf"


def deploy_server_conf() -> str:
    """deploy/nats/kpilot.conf, the server config of deploy/compose.yaml: client, monitoring and JetStream
    settings and the permission table's users, each password the environment variable nats-server reads
    at start. Server name, cluster listen and routes come from each server's command line."""
    users = [user_block(name, f"${password_env(name)}") for name in USERS]
    return ("# Generated by shared/natscluster.py from shared/subjects.py (a test fails on drift): "
            "do not edit.\n"
            "# Passwords are environment variables (KPILOT_PW_<USER>, `kpilot secrets` prints them).\n"
            "listen: 0.0.0.0:4222\nhttp: 0.0.0.0:8222\nmax_payload: 8MB\n\n"
            "jetstream {\n  store_dir: \"/data\"\n  max_memory_store: 256MB\n  max_file_store: 8GB\n}\n\n"
            "authorization {\n  users: [\n" + "\n".join(users) + "\n  ]\n}\nno_auth_user: operator\n")


def restart_member(state_dir: Path, port: int, name: str, *, timeout_s: float = 60.0) -> int:
    """Stop member `name` of the cluster `up --cluster` started on `port` (SIGTERM: lame duck, store
    flushed), start it again on its config and store, wait until its /healthz says JetStream is current,
    record the new pid; returns it. One step of a rolling restart."""
    import os
    import signal
    import urllib.error
    import urllib.request

    path = servers_file(state_dir, port)
    st = msgspec.json.decode(path.read_bytes(), type=ClusterState)
    member = next((s for s in st.servers if s.name == name), None)
    if member is None:
        raise NatsServerError(f"no member {name!r} in {path}; members: {', '.join(s.name for s in st.servers)}")
    client_port = next(iter(_ports(member.url)))
    if member.pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(member.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while port_open("127.0.0.1", client_port) and time.monotonic() < deadline:
            time.sleep(0.05)
    conf, log = state_dir / f"nats-{client_port}.conf", state_dir / f"nats-{client_port}.log"
    with open(log, "ab") as fh:
        proc = subprocess.Popen([str(find_binary()), "-c", str(conf)], stdout=fh, stderr=fh,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    (state_dir / f"nats-{client_port}.pid").write_text(str(proc.pid))
    member.pid = proc.pid
    path.write_bytes(msgspec.json.encode(st))
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{member.http_port}/healthz", timeout=1) as r:
                if r.status == 200:
                    return proc.pid
        except (urllib.error.URLError, OSError):
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise NatsServerError(f"{name} did not come back healthy within {timeout_s:.0f} s; see {log}")
        time.sleep(0.2)
