"""The consumer's next fetch asks for what the stream still holds for it (pure logic, no NATS)."""

from __future__ import annotations

from nats.aio.msg import Msg

from shared.bus import _next_ask


def _delivered(pending: int) -> Msg:
    # a JetStream delivery's reply subject: stream, consumer, deliveries, stream seq, consumer seq, ts, pending
    return Msg(_client=None, subject="telemetry.state.n.0",  # type: ignore[arg-type]
               reply=f"$JS.ACK.TELEMETRY.c.1.10.10.1700000000000000000.{pending}", data=b"{}")


def test_the_next_fetch_asks_for_what_is_pending_at_least_one_at_most_a_batch() -> None:
    assert _next_ask([_delivered(9), _delivered(7)], 256) == 7  # the last delivery's count
    assert _next_ask([_delivered(0)], 256) == 1  # caught up: a long poll that returns on the first message
    assert _next_ask([_delivered(5000)], 256) == 256


def test_a_delivery_without_jetstream_metadata_asks_for_the_full_batch() -> None:
    plain = Msg(_client=None, subject="x", reply="", data=b"{}")  # type: ignore[arg-type]
    assert _next_ask([plain], 64) == 64
