"""Supervision on a real stack (`kpilot up --detach`, processes as a user gets them): a service killed with
SIGKILL is restarted by the supervisor, answers health again, and `kpilot status` shows the restart and
the exit status; nats-server killed the same way comes back on its port and the services reconnect."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from services.kpilot.stack import read_state
from shared.natsserver import free_port, port_open
from tests.backbone.test_stack import kpilot


def _status(url: str, state: str) -> dict[str, dict]:
    out = kpilot("status", "--json", "--nats", url, "--state-dir", state, timeout=60)
    rows = json.loads(out.stdout) if out.stdout.strip() else []
    # nats-server rows are named after the server (`kpilot`): keyed here by their kind
    return {(r["name"] if r["kind"] == "service" else "nats-server"): r for r in rows}


def _wait(url: str, state: str, ok, timeout_s: float = 90.0) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = _status(url, state)
        if rows and ok(rows):
            return rows
        time.sleep(0.5)
    raise AssertionError(f"status never satisfied the condition: {rows}")


@pytest.mark.slow
def test_killed_services_and_nats_are_restarted_and_status_says_so(tmp_path: Path) -> None:
    port, state = free_port(), str(tmp_path / "state")
    url = f"nats://127.0.0.1:{port}"
    up = kpilot("up", "--detach", "--port", str(port), "--state-dir", state, timeout=200)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert "supervised" in up.stdout
        st = read_state(Path(state), port)
        assert st is not None and st.phase == "running"
        victim = st.services["verifier"]
        os.kill(victim, signal.SIGKILL)
        rows = _wait(url, state, lambda r: r["verifier"]["healthy"]
                     and r["verifier"]["supervisor"]["restarts"] == 1)
        sup = rows["verifier"]["supervisor"]
        assert sup["last_exit"] == -signal.SIGKILL and sup["pid"] != victim
        text = kpilot("status", "--nats", url, "--state-dir", state, timeout=60)
        assert "restarts=1 last_exit=-9" in text.stdout, text.stdout

        os.kill(st.nats_pid, signal.SIGKILL)
        rows = _wait(url, state, lambda r: r.get("nats-server", {}).get("supervisor", {}).get("restarts") == 1
                     and all(x["healthy"] for x in r.values() if x["kind"] == "service"))
        assert rows["nats-server"]["supervisor"]["last_exit"] == -signal.SIGKILL
    finally:
        down = kpilot("down", "--port", str(port), "--state-dir", state, timeout=90)
    assert down.returncode == 0, down.stderr
    assert not port_open("127.0.0.1", port)
    assert read_state(Path(state), port) is None
