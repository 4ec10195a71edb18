"""`kpilot secrets` and `kpilot provision`, the commands the deploy files run, against a real nats-server:
the files `secrets` writes are what the Compose secrets and Kubernetes Secrets carry, and provisioning
(with the critic's public key into the `trust` bucket) succeeds as admin and only as admin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from shared.bus import Bus
from shared.natsauth import CREDS_ENV, read_creds_file
from shared.natscluster import password_env
from shared.natsserver import EmbeddedServer, free_port
from shared.signing import key_id_of, load_private_key, load_public_key, trusted_key
from shared.subjects import ADMIN, OPERATOR_NAME, USERS

ROOT = Path(__file__).resolve().parents[2]


def _kpilot(*args: str, creds: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != CREDS_ENV} | {"PYTHONPATH": str(ROOT)}
    if creds is not None:
        env[CREDS_ENV] = str(creds)
    return subprocess.run([sys.executable, "-m", "services.kpilot", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_secrets_prints_every_users_password_and_writes_their_creds_files_and_the_signing_key(
        tmp_path: Path) -> None:
    out = _kpilot("secrets", "--state-dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    lines = dict(line.split("=", 1) for line in out.stdout.splitlines())
    assert list(lines) == [password_env(u) for u in USERS]  # admin included; nothing else on stdout
    for user in USERS:
        path = tmp_path / "creds" / f"{user}.json"
        assert path.stat().st_mode & 0o777 == 0o600
        creds = read_creds_file(path)
        assert (creds.user, creds.password) == (user, lines[password_env(user)])
    key = tmp_path / "signing" / "critic.key"
    assert key.stat().st_mode & 0o777 == 0o600
    assert key_id_of(load_private_key(key)) == key_id_of(load_public_key(tmp_path / "signing" / "critic.pub"))
    again = _kpilot("secrets", "--state-dir", str(tmp_path))  # a rerun keeps everything
    assert again.stdout == out.stdout
    assert key_id_of(load_private_key(key)) == key_id_of(load_public_key(tmp_path / "signing" / "critic.pub"))


async def test_provision_is_admin_only_and_publishes_the_critics_public_key(tmp_path: Path) -> None:
    assert _kpilot("secrets", "--state-dir", str(tmp_path)).returncode == 0
    server = EmbeddedServer(tmp_path, port=free_port())  # the same users.json: the passwords secrets printed
    server.start()
    try:
        pub = tmp_path / "signing" / "critic.pub"
        args = ("provision", "--trust-key", str(pub), "--nats", server.plain_url())
        refused = _kpilot(*args, creds=tmp_path / "creds" / f"{OPERATOR_NAME}.json")
        assert refused.returncode == 2 and "admin-only" in refused.stderr, refused.stderr
        bus = await Bus.connect(server.plain_url(), "test", creds_file="")
        try:
            assert await trusted_key(bus.js) is None  # the operator created nothing
        finally:
            await bus.close()
        done = _kpilot(*args, creds=tmp_path / "creds" / f"{ADMIN}.json")
        assert done.returncode == 0, done.stderr
        assert "kv trust key critic set" in done.stdout
        bus = await Bus.connect(server.plain_url(), "test", creds_file="")  # any subscriber reads it
        try:
            key = await trusted_key(bus.js)
        finally:
            await bus.close()
        assert key is not None
        assert key_id_of(key) == key_id_of(load_private_key(tmp_path / "signing" / "critic.key"))
    finally:
        server.stop()
