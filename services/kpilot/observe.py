"""`kpilot status` and `kpilot tail`: what operators see."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
from nats import errors as nats_errors
from nats.js.api import ConsumerConfig, DeliverPolicy

from shared import natscluster
from shared.bus import Bus
from shared.signing import check_patch, load_public_key, trusted_key
from shared.subjects import SERVICE_NAMES, stream_for


async def collect(bus: Bus, subject: str, wait_s: float) -> list[dict[str, Any]]:
    """Publish an empty request and gather every reply that arrives within `wait_s` (scatter-gather)."""
    inbox = bus.nc.new_inbox()
    replies: list[dict[str, Any]] = []
    sub = await bus.nc.subscribe(inbox)
    await bus.nc.publish(subject, b"", reply=inbox)
    deadline = time.monotonic() + wait_s
    try:
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = await sub.next_msg(timeout=left)
            except (nats_errors.Error, TimeoutError):  # wait_s over (or the connection went)
                break
            if msg.data:  # a 503 no-responders status comes with an empty body
                replies.append(json.loads(msg.data))
    finally:
        await sub.unsubscribe()
    return replies


async def status(url: str, *, wait_s: float = 0.7, state_dir: Path | None = None) -> list[dict[str, Any]]:
    """One row per service instance: name, healthy, version, counters; missing services are unhealthy.
    Then one row (`kind: nats-server`) per server: name, url, pid, up, the streams it leads."""
    bus = await Bus.connect(url, "kpilot")
    try:
        stats = await collect(bus, "$SRV.STATS", wait_s)
        servers = await natscluster.servers_status(bus.js, url, state_dir, dict(bus.nc._server_info))
    finally:
        await bus.close()
    rows = []
    for s in stats:
        health = next((e.get("data") for e in s.get("endpoints", []) if e.get("name") == "health"), None) or {}
        endpoints = {e["name"]: {"requests": e.get("num_requests", 0), "errors": e.get("num_errors", 0)}
                     for e in s.get("endpoints", [])}
        counters: dict[str, int] = {}
        for c in health.get("consumers", {}).values():
            for k, v in c.items():
                counters[k] = counters.get(k, 0) + v
        counters["requests"] = sum(e["requests"] for e in endpoints.values())
        counters["errors"] = sum(e["errors"] for e in endpoints.values())
        rows.append({"kind": "service", "name": s.get("name"), "instance": health.get("instance", s.get("id")),
                     "id": s.get("id"), "healthy": bool(health.get("healthy")), "version": s.get("version"),
                     "counters": counters, "consumers": health.get("consumers", {}), "endpoints": endpoints,
                     "details": health.get("details", {}), "metrics_url": health.get("metrics_url") or None})
    seen = {r["name"] for r in rows}
    rows += [{"kind": "service", "name": n, "instance": None, "id": None, "healthy": False, "version": None, "counters": {},
              "consumers": {}, "endpoints": {}, "details": {"error": "no instance answered"},
              "metrics_url": None}
             for n in SERVICE_NAMES if n not in seen]
    rows.sort(key=lambda r: (r["name"] or "", r["instance"] or ""))
    return rows + [{"kind": "nats-server", **msgspec.to_builtins(s)} for s in servers]


def add_supervision(rows: list[dict[str, Any]], children: dict[str, Any]) -> list[dict[str, Any]]:
    """Each row gets its supervised process's `restarts`, `last_exit` and `pid` (from the stack's state
    file, `kpilot up`'s supervisor), and nats-server a row of its own."""
    for r in rows:
        child = children.get(r["name"]) if r["kind"] == "service" else None
        if child is not None:
            r["supervisor"] = msgspec.to_builtins(child)
    if "nats-server" in children:
        servers = [r for r in rows if r["kind"] == "nats-server"]
        if not servers:
            rows.append({"kind": "nats-server", "name": "nats-server", "url": "", "pid": None, "up": True,
                         "leader_of": []})
            servers = rows[-1:]
        servers[0]["supervisor"] = msgspec.to_builtins(children["nats-server"])
    return rows


def print_status(rows: list[dict[str, Any]], as_json: bool) -> int:
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            sup = r.get("supervisor")
            restarts = ""
            if sup is not None:
                restarts = f" pid={sup['pid']} restarts={sup['restarts']}"
                if sup["last_exit"] is not None:
                    restarts += f" last_exit={sup['last_exit']}"
                if sup.get("next_start_at"):
                    restarts += f" restarting in {max(sup['next_start_at'] - time.time(), 0):.0f}s"
            if r["kind"] == "nats-server":
                mark = "up" if r["up"] else "DOWN"
                print(f"{'nats':<11} {mark:<8} {r['name']:<15} {r['url'] or '-':<22} pid={r['pid'] or '-'} "
                      f"leads {len(r['leader_of'])} streams{restarts}")
                continue
            c = r["counters"]
            mark = "healthy" if r["healthy"] else "DOWN"
            dead = r["details"].get("dead")
            print(f"{r['name']:<11} {mark:<8} {r['version'] or '-':<6} {r['instance'] or '-':<24} "
                  f"received={c.get('received', 0)} handled={c.get('handled', 0)} "
                  f"dead={c.get('dead_lettered', 0)} deferred={c.get('deferred', 0)} "
                  f"requests={c.get('requests', 0)}{restarts}" + (f" DIED: {dead}" if dead else ""))
    return 0 if all(r["healthy"] for r in rows if r["kind"] == "service") else 1


def parse_duration(text: str) -> timedelta:
    """'90s', '5m', '2h', '1d' -> timedelta; anything else names the accepted form."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        return timedelta(seconds=float(text[:-1]) * units[text[-1]])
    except (KeyError, ValueError, IndexError):
        raise ValueError(f"--since {text!r}: use a number and a unit, e.g. 30s, 5m, 2h or 1d") from None


def render_line(subject: str, data: Any) -> str:
    if not isinstance(data, dict):
        return f"{subject}  {data!r}"
    ts = datetime.fromtimestamp(data.get("ts", 0), UTC).strftime("%H:%M:%S.%f")[:-3]
    skip = {"kind", "id", "ts", "source", "schema_version", "job_id", "causation_id"}
    body = ", ".join(f"{k}={json.dumps(v)[:60]}" for k, v in data.items() if k not in skip)
    job = f" job={data['job_id']}" if data.get("job_id") else ""
    return f"{ts} {subject} {data.get('kind', '?')} from {data.get('source', '?')}{job}: {body}"


async def tail(url: str, subjects: list[str], *, as_json: bool, since: timedelta | None,
               count: int | None, timeout_s: float | None, verify: bool = False,
               trust_key: str | None = None) -> int:
    """Print each message; with `verify`, each `patches.verified.*` one with its signature check against
    the critic key of the `trust` bucket (or the public key file `trust_key`)."""
    bus = await Bus.connect(url, "kpilot")
    key = None
    if verify:
        key = load_public_key(trust_key) if trust_key else await trusted_key(bus.js)
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def _cb(msg: Any) -> None:
        await queue.put(msg)

    subs = []
    try:
        for subject in subjects:
            if since is None:
                subs.append(await bus.nc.subscribe(subject, cb=_cb))
                continue
            start = datetime.now(UTC) - since
            stream = stream_for(subject.replace(">", "x").replace("*", "x")).name
            subs.append(await bus.js.subscribe(
                subject, stream=stream, cb=_cb, ordered_consumer=True,
                config=ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_TIME, opt_start_time=start)))
        await bus.nc.flush()
        seen = 0
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while count is None or seen < count:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            try:
                msg = await asyncio.wait_for(queue.get(), timeout=left)
            except TimeoutError:
                break
            try:
                data: Any = json.loads(msg.data)
            except ValueError:
                data = msg.data.decode("utf-8", errors="replace")
            check = check_patch(msg.data, key) if verify and msg.subject.startswith("patches.verified.") \
                else None
            if as_json:
                row = {"subject": msg.subject, "headers": dict(msg.headers or {}), "data": data}
                print(json.dumps(row | ({"signature": msgspec.to_builtins(check)} if check else {})))
            else:
                mark = "" if check is None else (f"  [signature ok: {check.reason}]" if check.ok else
                                                 f"  [SIGNATURE FAILED: {check.reason}]")
                print(render_line(msg.subject, data) + mark)
            sys.stdout.flush()
            seen += 1
    finally:
        for s in subs:
            await s.unsubscribe()
        await bus.close()
    if count is not None and seen < count:
        print(f"kpilot tail: {seen} of {count} messages within {timeout_s:g} s", file=sys.stderr)
        return 1
    return 0


__all__ = ["msgspec", "parse_duration", "print_status", "status", "tail"]
