"""`kpilot up --detach` / status / heartbeat / tail / down, run as a user would (subprocesses)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shared.bus import Bus
from shared.messages import Heartbeat
from shared.natsserver import EmbeddedServer, free_port, port_open
from shared.subjects import SERVICE_NAMES

ROOT = Path(__file__).resolve().parents[2]


def kpilot(*args: str, timeout: float = 150) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.kpilot", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, check=False)


@pytest.mark.slow
def test_up_status_heartbeat_tail_down(tmp_path: Path) -> None:
    port = free_port()
    state = str(tmp_path / "state")
    url = f"nats://127.0.0.1:{port}"
    up = kpilot("up", "--detach", "--port", str(port), "--state-dir", state, "--telemetry-period", "2")
    try:
        assert up.returncode == 0, up.stderr
        assert "6 services healthy" in up.stdout
        again = kpilot("up", "--detach", "--port", str(port), "--state-dir", state)
        assert again.returncode == 0 and "already up" in again.stdout

        status = kpilot("status", "--json", "--nats", url)
        assert status.returncode == 0, status.stderr
        rows = [r for r in json.loads(status.stdout) if r["kind"] == "service"]
        assert sorted(r["name"] for r in rows) == sorted(SERVICE_NAMES)
        for r in rows:
            assert r["healthy"] is True and r["version"] and "received" in r["counters"]
        telemetry = next(r for r in rows if r["name"] == "telemetry")
        assert telemetry["details"]["period_s"] == "2"  # up --telemetry-period reached the service

        beat = kpilot("heartbeat", "--nats", url)
        assert beat.returncode == 0, beat.stdout + beat.stderr
        assert "NO ACK" not in beat.stdout

        tail = kpilot("tail", "ops.heartbeat.>", "--json", "--since", "5m", "--count", "7", "--timeout", "10",
                      "--nats", url)
        lines = [json.loads(line) for line in tail.stdout.splitlines()]
        assert len(lines) == 7
        ping = next(x for x in lines if x["subject"] == "ops.heartbeat.ping")
        acks = [x for x in lines if x["subject"].startswith("ops.heartbeat.ack.")]
        assert ping["headers"]["Nats-Msg-Id"] == ping["data"]["id"]
        assert {a["data"]["service"] for a in acks} == set(SERVICE_NAMES)
        assert all(a["data"]["causation_id"] == ping["data"]["id"] for a in acks)

        status = kpilot("status", "--json", "--nats", url)
        handled = sum(r["counters"]["handled"] for r in json.loads(status.stdout) if r["kind"] == "service")
        assert handled >= len(SERVICE_NAMES)  # every service consumed the ping
    finally:
        down = kpilot("down", "--port", str(port), "--state-dir", state)
    assert down.returncode == 0, down.stderr
    assert not port_open("127.0.0.1", port)


def test_status_without_a_server_names_the_fix() -> None:
    out = kpilot("status", "--nats", f"nats://127.0.0.1:{free_port()}", timeout=30)
    assert out.returncode == 1
    assert "kpilot up" in out.stderr


def test_tail_rejects_a_bad_duration() -> None:
    out = kpilot("tail", "x.>", "--since", "forever", "--nats", f"nats://127.0.0.1:{free_port()}", timeout=30)
    assert out.returncode == 2
    assert "e.g. 30s, 5m" in out.stderr


def test_up_refuses_a_non_positive_telemetry_period(tmp_path: Path) -> None:
    out = kpilot("up", "--detach", "--port", str(free_port()), "--state-dir", str(tmp_path),
                 "--telemetry-period", "0", timeout=30)
    assert out.returncode == 2 and "give a positive number of seconds" in out.stderr


async def test_tail_count_ends_with_fewer_messages_than_asked(nats_server: EmbeddedServer,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`tail --count N` used to wait forever with fewer than N stored: it ends at --timeout (30 s by
    default with --count) and says how many came."""
    import asyncio

    from services.kpilot.commands import stack
    from services.kpilot.main import build_parser

    bus = await Bus.connect(nats_server.url("admin"), "test")  # a stored message on OPS: only admin may put one there
    await bus.publish("ops.note.x", Heartbeat(source="test"))
    await bus.close()
    url = nats_server.url("operator")
    monkeypatch.setattr(stack, "COUNT_TIMEOUT_S", 1.5)
    args = build_parser().parse_args(["tail", "ops.note.>", "--since", "5m", "--count", "3", "--nats", url])
    code = await asyncio.to_thread(args.func, args)
    out = capsys.readouterr()
    assert code == 1 and len(out.out.splitlines()) == 1 and "1 of 3 messages within 1.5 s" in out.err


def test_a_stack_that_fails_to_start_shows_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The supervisor's failure reaches the user with its cause and the end of its log, not only the
    stop line (a failed `kpilot up --cluster 3` once printed just "stopped 0 services")."""
    from services.kpilot import stack

    assert stack.up(tmp_path, free_port(), detach=True, services=("no_such_service",), timeout_s=60) == 1
    err = capsys.readouterr().err
    assert "the stack did not start: KeyError: 'no_such_service'" in err
    assert "supervisor: start failed: KeyError" in err and "Traceback" in err
