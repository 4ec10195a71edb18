"""A stack started by `kpilot up --tls`, looked at as an attacker on the same host would: no secret on
any command line (`ps`), secrets mode 0600, the monitor on loopback with its port in `kpilot status`,
TLS required with the generated CA, and `kpilot tail --verify` telling a signed patch from an altered one."""

from __future__ import annotations

import asyncio
import json
import stat
import subprocess
import sys
import urllib.request
from pathlib import Path

import msgspec
import pytest

from shared.bus import Bus
from shared.messages import VerifiedPatch
from shared.natsserver import free_port
from shared.signing import load_private_key, sign

ROOT = Path(__file__).resolve().parents[2]


def kpilot(*args: str, timeout: float = 150) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.kpilot", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, check=False)


async def _publish_patches(url: str, state: Path) -> None:
    """One patch signed with the stack's key, one altered copy of it, both stored by the critic's user."""
    bus = await Bus.connect(url, "critic", creds_file=str(state / "creds" / "critic.json"),
                            tls_ca=str(state / "tls" / "ca.pem"))
    try:
        good = sign(VerifiedPatch(source="critic", kernel="k", candidate_id="c1", diff="+BLOCK 128"),
                    load_private_key(state / "signing" / "critic.key"))
        bad = msgspec.structs.replace(good, id=good.id + "x", diff="+os.system('curl evil')")
        await bus.publish("patches.verified.k", good)
        await bus.publish("patches.verified.k", bad)
    finally:
        await bus.close()


@pytest.mark.slow
def test_tls_stack_hides_secrets_and_verifies_patches(tmp_path: Path) -> None:
    port, state = free_port(), tmp_path / "state"
    url, ca = f"tls://127.0.0.1:{port}", str(state / "tls" / "ca.pem")
    up = kpilot("up", "--detach", "--tls", "--port", str(port), "--state-dir", str(state),
                "--telemetry-period", "5")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert "monitor on http://127.0.0.1:" in up.stdout
        st = json.loads((state / f"stack-{port}.json").read_text())
        passwords = json.loads((state / "users.json").read_text())["passwords"]
        # ps: nothing secret on any command line of the stack's processes.
        for pid in [st["nats_pid"], *st["services"].values()]:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            assert not any(pw in cmdline for pw in passwords.values()), cmdline
            assert "@" not in cmdline, cmdline
        # Every file holding a secret is 0600.
        for rel in ("users.json", f"nats-{port}.conf", "signing/critic.key", "tls/server-key.pem",
                    "tls/ca-key.pem", *(f"creds/{n}.json" for n in st["services"])):
            assert stat.S_IMODE((state / rel).stat().st_mode) == 0o600, rel
        # The monitor answers on loopback, and status shows its port.
        with urllib.request.urlopen(f"http://127.0.0.1:{st['http_port']}/varz", timeout=5) as r:
            assert json.loads(r.read())["tls_required"] is True
        status = kpilot("status", "--nats", url, "--tls-ca", ca, "--state-dir", str(state))
        assert status.returncode == 0, status.stdout + status.stderr
        assert f"NATS monitor: http://127.0.0.1:{st['http_port']}" in status.stdout
        # Without the CA a client cannot talk to the server.
        plain = kpilot("status", "--nats", f"nats://127.0.0.1:{port}", "--state-dir", str(state), timeout=60)
        assert plain.returncode != 0
        # A signed patch passes `tail --verify`, its altered copy fails.
        asyncio.run(_publish_patches(url, state))
        tail = kpilot("tail", "patches.verified.>", "--since", "5m", "--verify", "--json", "--count", "2",
                      "--timeout", "20", "--nats", url, "--tls-ca", ca)
        rows = [json.loads(line) for line in tail.stdout.splitlines()]
        assert [r["signature"]["ok"] for r in rows] == [True, False], tail.stdout + tail.stderr
        assert "forged or altered" in rows[1]["signature"]["reason"]
        text = kpilot("tail", "patches.verified.>", "--since", "5m", "--verify", "--count", "2",
                      "--timeout", "20", "--nats", url, "--tls-ca", ca)
        assert "[signature ok:" in text.stdout and "[SIGNATURE FAILED:" in text.stdout
    finally:
        down = kpilot("down", "--port", str(port), "--state-dir", str(state))
    assert down.returncode == 0, down.stderr
