"""`kpilot heartbeat`: a ping through JetStream that every service must answer, end to end."""

from __future__ import annotations

import asyncio
import time

from shared.bus import Bus
from shared.messages import Heartbeat, HeartbeatAck, decode
from shared.subjects import HEARTBEAT_ACK, HEARTBEAT_PING, SERVICE_NAMES


async def heartbeat(url: str, *, timeout_s: float = 10.0,
                    services: tuple[str, ...] = SERVICE_NAMES) -> dict[str, float]:
    """Publish one ping; return service -> round-trip seconds for every service that acknowledged it."""
    bus = await Bus.connect(url, "kpilot")
    acks: dict[str, float] = {}
    done = asyncio.Event()
    ping = Heartbeat(source="kpilot")
    start = time.perf_counter()

    async def _on_ack(raw) -> None:  # type: ignore[no-untyped-def]
        ack = decode(raw.data, HeartbeatAck)
        if ack.causation_id == ping.id and isinstance(ack, HeartbeatAck):
            acks.setdefault(ack.service, time.perf_counter() - start)
            if set(services) <= set(acks):
                done.set()

    sub = await bus.nc.subscribe(f"{HEARTBEAT_ACK}.>", cb=_on_ack)
    try:
        await bus.nc.flush()
        await bus.publish(HEARTBEAT_PING, ping)
        try:
            await asyncio.wait_for(done.wait(), timeout_s)
        except TimeoutError:
            pass
    finally:
        await sub.unsubscribe()
        await bus.close()
    return acks
