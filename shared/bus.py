"""The bus: typed JetStream publish with de-duplication, durable pull consumers with explicit acks,
bounded redelivery with back-off and dead letters, and request/reply with timeouts.

Usage:
    bus = await Bus.connect(url, service="planner")
    await bus.publish(candidate_subject(k), candidate)           # Nats-Msg-Id = candidate.id
    await bus.consume("verdicts.>", "planner-verdicts", on_verdict, Verdict)
    reply = await bus.request(tool_subject("compile"), req, ToolResult, timeout=60)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TypeVar
from urllib.parse import urlparse

import msgspec
import nats
import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, PubAck

from shared import metrics
from shared.messages import DeadLetter, Message, decode, encode
from shared.natsauth import CA_ENV, CREDS_ENV, AuthError, client_tls, read_creds_file
from shared.subjects import dlq_subject, stream_for

M = TypeVar("M", bound=Message)
Handler = Callable[[M], Awaitable[None]]

# Handler failures are retried after these delays (s), then dead-lettered: a transient fault (a tool
# runner restarting) heals within ~30 s, a deterministic bug stops costing work after 5 tries.
DEFAULT_BACKOFF: tuple[float, ...] = (0.5, 2.0, 5.0, 15.0)
DEFAULT_MAX_DELIVER = 5
# How many handled message ids a consumer remembers to drop redeliveries of work already done.
_SEEN_IDS = 10_000
# After a reconnect the other services come back within one reconnect wait (0.5 s) plus jitter; a request
# that finds no responder this soon after is retried instead of reported (tests/e2e/test_nats_restart.py).
_RECONNECT_SETTLE_S = 2.0


class BusError(RuntimeError):
    """The bus could not do what was asked; the message names the fix."""


class NoResponders(BusError):
    """Nobody serves the subject of a request."""


class RequestTimeout(BusError):
    """A request got no reply in time."""


class ConsumerStats(msgspec.Struct):
    received: int = 0
    handled: int = 0
    retried: int = 0
    duplicates: int = 0
    dead_lettered: int = 0


async def connect(url: str, name: str, *, timeout_s: float = 3.0, reconnect: bool = True,
                  on_reconnect: Callable[[], None] | None = None, creds_file: str | None = None,
                  tls_ca: str | None = None) -> Client:
    """Connect with reconnect and back-off; turn the common failures into messages that say the fix.

    Credentials come from the URL (in-process clients) or from `creds_file` (default $KPILOT_NATS_CREDS:
    a 0600 file, so no password is on a command line); with `tls_ca` (default $KPILOT_NATS_CA) the
    connection is TLS and the server must present a certificate from that CA."""
    log = structlog.get_logger().bind(service=name)
    creds_file = creds_file if creds_file is not None else os.environ.get(CREDS_ENV) or None
    tls_ca = tls_ca if tls_ca is not None else os.environ.get(CA_ENV) or None
    try:
        creds = read_creds_file(creds_file) if creds_file and "@" not in url else None
        tls = client_tls(tls_ca) if tls_ca else None
    except AuthError as e:
        raise BusError(str(e)) from None

    async def _disconnected() -> None:
        if not nc.is_closed and not nc.is_draining:
            log.warning("nats disconnected", url=_redact(url))

    async def _reconnected() -> None:
        log.info("nats reconnected", url=_redact(url))
        if on_reconnect is not None:
            on_reconnect()

    seen: list[str] = []

    async def _error(e: Exception) -> None:
        seen.append(str(e))
        if nc.is_connected:  # connect failures are reported once, by the exception below
            log.warning("nats error", error=str(e))

    nc = Client()
    try:
        # Two tries for the first connection so a wrong URL fails fast; unlimited reconnects after that.
        # nats-py waits forever on a server that requires TLS from a client without it: bound the wait.
        # The credentials also as options: nats-py adds the servers a cluster advertises (INFO connect_urls)
        # to its pool without them, and a reconnect there would come in as the no_auth_user (operator).
        user, password = (creds.user, creds.password) if creds else _credentials(url)
        servers = url.split(",") if "," in url else url
        await asyncio.wait_for(nc.connect(
            servers, name=name, connect_timeout=timeout_s, allow_reconnect=reconnect, max_reconnect_attempts=2,
            reconnect_time_wait=0.5, disconnected_cb=_disconnected, reconnected_cb=_reconnected,
            error_cb=_error, user=user, password=password,
            tls=tls, tls_hostname=urlparse(url.split(",")[0]).hostname if tls else None), timeout=4 * timeout_s + 2)
        nc.options["max_reconnect_attempts"] = -1
        nc.options["drain_timeout"] = 5  # seconds; the default 30 s only delays a stopping service
        return nc
    except nats.errors.NoServersError as e:
        if any("authorization" in s.lower() for s in seen):
            raise BusError(f"NATS refused the credentials for {_redact(url)}. Fix: use the URL `kpilot up` "
                           f"wrote for this service (state dir users.json), or connect without credentials "
                           f"as the operator.") from e
        raise BusError(f"cannot reach NATS at {_redact(url)}. Fix: start the stack with `kpilot up` "
                       f"(or `make run`), or pass `--nats URL` / set KPILOT_NATS to a running server.") from e
    except TimeoutError as e:
        with contextlib.suppress(Exception):
            await nc.close()
        tls_hint = "" if tls else (" If the stack runs with TLS (`kpilot up --tls`), pass --tls-ca "
                                   "<state-dir>/tls/ca.pem or set KPILOT_NATS_CA.")
        raise BusError(f"no NATS handshake with {_redact(url)} within {4 * timeout_s + 2:g} s.{tls_hint} "
                       f"Fix: check the URL and that `kpilot status` answers.") from e
    except (nats.errors.Error, OSError) as e:
        if "authorization" in str(e).lower():
            raise BusError(f"NATS refused the credentials for {_redact(url)}. Fix: use the URL `kpilot up` "
                           f"printed for this service, or connect without credentials as the operator.") from e
        raise BusError(f"cannot connect to NATS at {_redact(url)}: {e}. Fix: check the URL and that "
                       f"`kpilot status` answers.") from e


def schema_violations(data: bytes) -> str:
    """Every JSON Schema violation of an invalid message, for its dead letter (what a client in another
    language needs to fix it); '' when the payload is not JSON at all."""
    from shared.schemagen import validate_message
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return ""
    found = validate_message(doc)
    return ("; schema violations: " + "; ".join(found)) if found else ""


def _credentials(url: str) -> tuple[str | None, str | None]:
    """The user and password of the first URL of `url` that has them (None, None without)."""
    for u in url.split(","):
        parsed = urllib.parse.urlparse(u if "://" in u else f"nats://{u}")
        if parsed.username:
            return urllib.parse.unquote(parsed.username), urllib.parse.unquote(parsed.password or "")
    return None, None


def _redact(url: str) -> str:
    if "," in url:  # a cluster's server list
        return ",".join(_redact(u) for u in url.split(","))
    if "@" not in url:
        return url
    scheme, rest = url.split("://", 1) if "://" in url else ("nats", url)
    creds, host = rest.rsplit("@", 1)
    return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"


class Bus:
    def __init__(self, nc: Client, service: str) -> None:
        self.nc = nc
        self.js: JetStreamContext = nc.jetstream()
        self.service = service
        self.log = structlog.get_logger().bind(service=service)
        self.consumers: dict[str, ConsumerStats] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._subs: list[JetStreamContext.PullSubscription] = []
        self._stopping = asyncio.Event()
        self.reconnected_at = 0.0  # time.monotonic() of the last reconnect, 0.0 if none
        self._reconnect = asyncio.Event()  # set (and replaced) on each reconnect

    @classmethod
    async def connect(cls, url: str, service: str, *, timeout_s: float = 3.0, creds_file: str | None = None,
                      tls_ca: str | None = None) -> Bus:
        made: list[Bus] = []

        def _reconnected() -> None:
            for bus in made:
                bus.on_reconnect()

        made.append(cls(await connect(url, service, timeout_s=timeout_s, on_reconnect=_reconnected,
                                      creds_file=creds_file, tls_ca=tls_ca), service))
        return made[0]

    def on_reconnect(self) -> None:
        self.reconnected_at = time.monotonic()
        self._reconnect.set()
        self._reconnect = asyncio.Event()

    # ------------------------------------------------------------ publish / request

    async def publish(self, subject: str, msg: Message, *, timeout_s: float = 5.0) -> PubAck:
        """Durable publish; the envelope id is the JetStream `Nats-Msg-Id`, so a retry is stored once."""
        try:
            ack = await self.js.publish(subject, encode(msg), timeout=timeout_s,
                                        headers={"Nats-Msg-Id": msg.id})
        except nats.errors.NoRespondersError as e:
            raise BusError(f"no stream captures {subject!r}. Fix: provision the streams "
                           f"(`kpilot up` does it) from shared/subjects.py.") from e
        except nats.js.errors.APIError as e:
            raise BusError(f"publish to {subject!r} refused: {e.description}") from e
        except nats.errors.TimeoutError as e:
            raise BusError(f"publish to {subject!r} not acknowledged within {timeout_s} s (is this "
                           f"service allowed to publish there? see shared/subjects.py permissions)") from e
        metrics.on_published(self.service, msg)
        return ack

    async def publish_pipelined(self, subject: str, msg: Message) -> asyncio.Future[PubAck]:
        """Durable publish without waiting for the stream's ack: for high-rate publishers (telemetry).

        Await the returned future (or `flush_pipelined`) before counting the message as stored.
        """
        metrics.on_published(self.service, msg)
        return await self.js.publish_async(subject, encode(msg), headers={"Nats-Msg-Id": msg.id})

    async def flush_pipelined(self) -> None:
        if self.js.publish_async_pending():
            await self.js.publish_async_completed()

    async def request(self, subject: str, msg: Message, reply_type: type[M], *, timeout_s: float = 10.0) -> M:
        """Core request/reply. A request in flight when the connection drops is sent again after the
        reconnect: a responder's reply written while the server was down reaches the new server before
        this client has re-subscribed its inbox and is lost, and the caller would wait out `timeout_s`
        (900 s for a verifier's tool call). Requests here (tools, decomposer, health) are idempotent."""
        data, deadline = encode(msg), time.monotonic() + timeout_s
        while True:
            reconnected = asyncio.ensure_future(self._reconnect.wait())
            pending = asyncio.ensure_future(
                self.nc.request(subject, data, timeout=max(deadline - time.monotonic(), 0.001)))
            try:
                await asyncio.wait({pending, reconnected}, return_when=asyncio.FIRST_COMPLETED)
            finally:  # also when our caller is cancelled
                reconnected.cancel()
                lost = not pending.done()
                if lost:
                    pending.cancel()
            if lost:  # the connection dropped and came back while we waited: the reply may be lost
                self.log.info("request resent after a reconnect", subject=subject, message_id=msg.id)
                continue
            try:
                reply = pending.result()
            except nats.errors.NoRespondersError as e:
                now = time.monotonic()
                if now - self.reconnected_at < _RECONNECT_SETTLE_S and deadline - now > 0.25:
                    await asyncio.sleep(0.25)  # the responder has not re-subscribed yet
                    continue
                raise NoResponders(f"no service answers on {subject!r}. Fix: start it (`kpilot up`, or "
                                   f"`python -m services.<name> --nats URL`).") from e
            except nats.errors.TimeoutError as e:
                raise RequestTimeout(f"no reply on {subject!r} within {timeout_s} s") from e
            return decode(reply.data, reply_type)  # type: ignore[return-value]

    # ------------------------------------------------------------ consume

    async def consume(self, subject: str, durable: str, handler: Handler[M], msg_type: type[M] | None = None,
                      *, max_deliver: int = DEFAULT_MAX_DELIVER,
                      backoff: tuple[float, ...] = DEFAULT_BACKOFF, ack_wait_s: float = 60.0,
                      batch: int = 64, new_only: bool = False, fetch_timeout_s: float = 1.0) -> ConsumerStats:
        """Start a durable pull consumer on `subject`; `handler` gets each decoded message once.

        Undecodable or invalid messages are dead-lettered on `dlq.<subject>` and terminated; a handler
        exception is logged and the message redelivered after a back-off, dead-lettered after
        `max_deliver` tries. A redelivery of a message already handled is acked and dropped.
        nats-py's fetch, once a first message arrived on its long poll, waits for a full `batch` until
        `fetch_timeout_s`: a latency-sensitive consumer (telemetry) passes a short one.
        """
        stream = stream_for(subject.replace(">", "x").replace("*", "x")).name
        config = ConsumerConfig(durable_name=durable, filter_subject=subject, ack_policy=AckPolicy.EXPLICIT,
                                ack_wait=ack_wait_s, max_deliver=max_deliver + 1, max_ack_pending=1000,
                                deliver_policy=DeliverPolicy.NEW if new_only else DeliverPolicy.ALL)
        sub = await self.js.pull_subscribe(subject, durable=durable, stream=stream, config=config)
        self._subs.append(sub)
        stats = self.consumers.setdefault(durable, ConsumerStats())
        seen: OrderedDict[str, None] = OrderedDict()
        log = self.log.bind(consumer=durable)

        async def _one(raw: Msg) -> None:
            stats.received += 1
            metrics.on_consumed(self.service, durable, "received")
            try:
                msg = decode(raw.data, msg_type)
            except (msgspec.DecodeError, msgspec.ValidationError) as e:
                await self.dead_letter(raw, f"invalid message: {e}{schema_violations(raw.data)}",
                                       raw.metadata.num_delivered)
                stats.dead_lettered += 1
                metrics.on_consumed(self.service, durable, "dead_lettered")
                await raw.term()
                return
            if msg.id in seen:
                stats.duplicates += 1
                metrics.on_consumed(self.service, durable, "duplicate")
                await raw.ack()
                return
            t0 = time.monotonic()
            try:
                await handler(msg)
            except Exception as e:  # noqa: BLE001 - a handler bug must not crash the service: retry, then dead-letter
                # Metadata parsing and the log binding cost per message: done only on this path.
                deliveries = raw.metadata.num_delivered
                mlog = log.bind(message_id=msg.id, job_id=msg.job_id, subject=raw.subject)
                if deliveries >= max_deliver:
                    mlog.exception("handler failed, dead-lettering", deliveries=deliveries)
                    await self.dead_letter(raw, f"handler failed {deliveries} times: {e!r}", deliveries)
                    stats.dead_lettered += 1
                    metrics.on_consumed(self.service, durable, "dead_lettered")
                    await raw.term()
                else:
                    delay = backoff[min(deliveries - 1, len(backoff) - 1)]
                    mlog.exception("handler failed, will retry", deliveries=deliveries, delay_s=delay)
                    stats.retried += 1
                    metrics.on_consumed(self.service, durable, "retried")
                    await raw.nak(delay=delay)
                return
            await raw.ack()
            stats.handled += 1
            metrics.on_consumed(self.service, durable, "handled")
            metrics.on_handled(self.service, durable, time.monotonic() - t0, time.time() - msg.ts)
            seen[msg.id] = None
            if len(seen) > _SEEN_IDS:
                seen.popitem(last=False)

        async def _loop() -> None:
            while not self._stopping.is_set():
                try:
                    msgs = await sub.fetch(batch, timeout=fetch_timeout_s)
                except (TimeoutError, nats.errors.TimeoutError):  # nats-py raises both kinds
                    continue
                except (nats.errors.ConnectionClosedError, asyncio.CancelledError):
                    return
                except Exception as e:  # noqa: BLE001 - reconnecting, server restarting: wait and fetch again
                    log.warning("fetch failed, retrying", error=repr(e))
                    await asyncio.sleep(0.5)
                    continue
                for raw in msgs:
                    await _one(raw)

        self._tasks.append(asyncio.create_task(_loop(), name=f"consume:{durable}"))
        return stats

    async def dead_letter(self, raw: Msg, reason: str, deliveries: int = 1) -> None:
        meta = None
        with contextlib.suppress(Exception):
            meta = raw.metadata.sequence.stream
        letter = DeadLetter(source=self.service, original_subject=raw.subject,
                            payload=raw.data.decode("utf-8", errors="replace"), reason=reason,
                            headers={k: str(v) for k, v in (raw.headers or {}).items()},
                            deliveries=deliveries, stream_seq=meta)
        self.log.warning("dead letter", subject=raw.subject, reason=reason)
        await self.publish(dlq_subject(raw.subject), letter)

    # ------------------------------------------------------------ lifecycle

    async def close(self) -> None:
        self._stopping.set()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        # A cancelled fetch can leave a late status message queued on its subscription, and drain would
        # then wait out nats-py's 30 s drain timeout: unsubscribe the pull subscriptions first.
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        self._subs.clear()
        if not self.nc.is_closed:
            with contextlib.suppress(Exception):
                await self.nc.drain()
