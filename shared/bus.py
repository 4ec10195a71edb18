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
import hashlib
import itertools
import os
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlparse

import msgspec
import nats
import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, PubAck

from shared import limits, metrics
from shared.messages import DeadLetter, Message, decode, encode
from shared.natsauth import CA_ENV, CREDS_ENV, AuthError, client_tls, read_creds_file
from shared.subjects import REQUEST_ACK_PREFIX, dlq_subject, stream_for

M = TypeVar("M", bound=Message)
Handler = Callable[[M], Awaitable[None]]

# Handler failures are retried after these delays (s), then dead-lettered: a transient fault (a tool
# runner restarting) heals within ~30 s, a deterministic bug stops costing work after 5 tries.
DEFAULT_BACKOFF: tuple[float, ...] = (0.5, 2.0, 5.0, 15.0)
DEFAULT_MAX_DELIVER = 5
# A dependency that is down (toolrunner restarting: ~5 s on this machine) is asked again after these
# delays (s); the last repeats without limit, so a message waits out any outage.
INFRA_BACKOFF: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0, 15.0)
# How soon a killed service's unacked message is redelivered; live handlers mark theirs in progress
# every ack_wait / 4, so long work (a 600 s bench_ab) never times out.
DEFAULT_ACK_WAIT_S = 30.0
# A consumer loop that dies (its durable deleted, a bug) is started again this many times, then the
# service ends so that its supervisor restarts it.
_LOOP_RESTARTS = 5
_FETCH_FAILURES = 20  # ~10 s of failed fetches while connected (0.5 s apart): the subscription is broken
_DLQ_PAYLOAD = 256 << 10  # bytes of the original kept in a dead letter
_DLQ_REASON = 8192
# A request sent with a responder to watch carries this header: the taking instance publishes its micro
# id there (shared/service.py), then the caller pings that id every _LIVENESS_S.
ACK_TO_HEADER = "Kpilot-Ack-To"
# What a responder publishes on that subject when its connection dropped and came back while it worked
# (followed by why): its reply went out on the new connection, which may not answer a request that came
# in on the old one, so the caller sends the request again (requests here are idempotent).
ASK_AGAIN_PREFIX = b"ask-again:"
SERVICE_ERROR_HEADER = "Nats-Service-Error"
SERVICE_ERROR_CODE_HEADER = "Nats-Service-Error-Code"
# The ack is published from the responder's event loop as the request arrives; a loaded 2-core machine
# delays it by well under a second. Without an ack in 10 s (a responder that is no ServiceRuntime) the
# request is not watched.
_ACK_DEADLINE_S = 10.0
_LIVENESS_S = 2.0
# A dead instance answers its ping with 'no responders' at once; a busy one may be slow: a timeout
# is not taken for death.
_PING_TIMEOUT_S = 2.0
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


class ServiceFailed(BusError):
    """The responder answered with a micro-service error (it refused the request, or its handler failed)."""


class ResponderLost(BusError):
    """The service instance that took a request died or left before it answered."""


class Unavailable(BusError):
    """A dependency of a handler is down (no toolrunner, a runner died mid-call): the message is not at
    fault. Raised by a handler, the bus defers the message (nak with a delay) instead of counting a try."""

    def __init__(self, message: str, retry_in_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_in_s = retry_in_s


class ConsumerStats(msgspec.Struct):
    received: int = 0
    handled: int = 0
    retried: int = 0
    duplicates: int = 0
    dead_lettered: int = 0
    deferred: int = 0  # naks because a dependency was down (Unavailable)
    loop_restarts: int = 0


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
    language needs to fix it); '' when the payload is not JSON at all or breaks the size/depth limits."""
    from shared.schemagen import validate_message
    try:
        limits.check(data, max_bytes=limits.MAX_BYTES)
        found = validate_message(msgspec.json.decode(data))
    except Exception:  # noqa: BLE001 - not JSON, too big or deep, or the validator gave up: no list
        return ""
    return ("; schema violations: " + "; ".join(found[:20])) if found else ""


def _describe(e: BaseException) -> str:
    """An exception as one bounded line for a dead letter or log (a RecursionError's repr is fine, some
    messages carry the whole payload)."""
    text = f"{type(e).__name__}: {e}"
    return text if len(text) <= 2000 else text[:2000] + " ..."


class _Watch:
    """The liveness side of one watched request: the responder's ack, then pings of its micro id.

    No task and no subscription of its own: the bus's one ack subscription hands it the ack (`acked`),
    a timer pings the responder every `_LIVENESS_S`, and `lost` gets why the responder is gone. A
    responder that does not acknowledge within `_ACK_DEADLINE_S` (not a ServiceRuntime) is not watched:
    the request's own timeout applies. A responder whose own connection dropped and came back while it
    worked says so on the same ack subject (`ASK_AGAIN`): its reply was refused by the server of its new
    connection (`allow_responses` holds for the connection the request came in on), and the request's
    wait ends with `_ASKED_AGAIN` (through `ends`): it sends itself once more. A responder is declared gone
    on its second 'no responders' to a ping in a row: after one, it may be re-subscribing on another server
    of a cluster."""

    __slots__ = ("again", "ends", "handle", "loop", "lost", "missed", "nc", "ping", "service", "t0", "task", "who")

    def __init__(self, nc: Client, service: str) -> None:
        self.nc, self.service = nc, service
        self.loop = asyncio.get_running_loop()
        self.lost: asyncio.Future[str] = self.loop.create_future()
        self.again = ""  # why the responder asks for the request again ('' while it does not)
        self.ends: _Ends | None = None  # the request's wait, ended by such a notice
        self.missed = 0  # pings in a row answered 'no responders'
        self.t0 = time.monotonic()
        self.ping = ""
        self.who: dict[str, str] = {}
        self.handle: asyncio.TimerHandle | None = None
        self.task: asyncio.Task[None] | None = None

    def acked(self, data: bytes) -> None:
        if data.startswith(ASK_AGAIN_PREFIX):  # the responder reconnected mid-call: its reply was refused
            self.again = data[len(ASK_AGAIN_PREFIX):].decode("utf-8", errors="replace") or "asked again"
            if self.ends is not None:
                self.ends.asked_again()
            return
        if self.ping or self.lost.done() or time.monotonic() - self.t0 > _ACK_DEADLINE_S:
            return  # a second ack, or one past the deadline: the request is not watched
        try:
            self.who = msgspec.json.decode(data, type=dict[str, str])
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.lost.set_result(f"the {self.service} that took the request acknowledged it with a malformed ack")
            return
        self.ping = f"$SRV.PING.{self.service}.{self.who.get('id', '')}"
        self.handle = self.loop.call_later(_LIVENESS_S, self._tick)

    def _tick(self) -> None:
        self.task = self.loop.create_task(self._ping())

    async def _ping(self) -> None:
        try:
            await self.nc.request(self.ping, b"", timeout=_PING_TIMEOUT_S)
            self.missed = 0
        except nats.errors.NoRespondersError:
            self.missed += 1
            if self.missed < 2:  # re-subscribing after a reconnect of its own, perhaps: ask again
                self.handle = self.loop.call_later(_LIVENESS_S, self._tick)
                return
            if not self.lost.done():
                self.lost.set_result(
                    f"{self.service} {self.who.get('instance', self.who.get('id', '?'))} took the request and "
                    f"was gone {time.monotonic() - self.t0:.0f} s later (killed, or lost its connection)")
            return
        except Exception:  # noqa: BLE001, S110 - busy or reconnecting: not proof of death, ask again
            pass
        self.handle = self.loop.call_later(_LIVENESS_S, self._tick)

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
        if self.task is not None:
            self.task.cancel()
        if not self.lost.done():
            self.lost.cancel()


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


def _next_ask(msgs: list[Msg], batch: int) -> int:
    """How many messages the next fetch asks for: as many as the stream held for this consumer when the
    last one was delivered (its metadata's num_pending), at least 1 and at most `batch`.

    nats-py's fetch of n, once its long poll has a first message, waits up to its timeout for all n: a
    consumer that has caught up and asks for a full batch holds each message until `batch` more arrive
    or the fetch times out (100+ ms at 2,000 msgs/s). Asking for what is pending, and for 1 (a long
    poll that returns on the first message) when nothing is, keeps a caught-up consumer's latency at one
    round trip and a consumer behind its stream on full batches."""
    try:
        pending = msgs[-1].metadata.num_pending
    except Exception:  # noqa: BLE001 - no JetStream metadata (not expected): ask for the full batch
        return batch
    return max(1, min(batch, pending))


class _InProgress:
    """Marks the message a consumer is handling in progress every `every_s`, so `ack_wait` never times
    out live work. One ticker per consumer loop (its messages are handled one at a time), not a timer
    or task per message: a message costs two assignments."""

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self.current: Msg | None = None

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            if (raw := self.current) is not None:
                with contextlib.suppress(Exception):  # a failed progress ack only brings the redelivery forward
                    await raw.in_progress()


NO_RESPONDERS_STATUS = "503"  # the server's status for a request (or publish) nobody takes
# why a request's wait ended without a reply
_LOST, _RECONNECTED, _EXPIRED, _ASKED_AGAIN = object(), object(), object(), object()


class _Replies:
    """The bus's request/reply inbox: one subscription, each request a numbered token under it and a
    future that its reply (or the server's no-responders status) resolves. nats-py's `request` wraps
    the same in `wait_for`; here the caller awaits the future itself, so a reply reaches it one loop
    turn sooner, and the bus needs no task around the request to also watch reconnects and liveness."""

    def __init__(self, nc: Client) -> None:
        self.nc = nc
        self.prefix = ""
        self.pending: dict[str, asyncio.Future[object]] = {}
        self.seq = itertools.count(1)

    async def send(self, subject: str, data: bytes, headers: dict[str, str] | None) -> tuple[str, asyncio.Future[object]]:
        if not self.prefix:  # set before the await: a concurrent first request makes no second subscription
            self.prefix = self.nc.new_inbox() + "."
            try:
                await self.nc.subscribe(self.prefix + "*", cb=self._on_reply)
            except BaseException:
                self.prefix = ""
                raise
        token = str(next(self.seq))
        answer: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self.pending[token] = answer
        try:
            await self.nc.publish(subject, data, reply=self.prefix + token, headers=headers)
        except BaseException:
            self.pending.pop(token, None)
            raise
        return token, answer

    def forget(self, token: str) -> None:
        self.pending.pop(token, None)

    async def _on_reply(self, msg: Msg) -> None:
        answer = self.pending.pop(msg.subject[len(self.prefix):], None)
        if answer is not None and not answer.done():
            answer.set_result(msg)


class _Ends:
    """Callbacks that end one request's wait with a marker (unless its reply came first)."""

    __slots__ = ("answer",)

    def __init__(self, answer: asyncio.Future[object]) -> None:
        self.answer = answer

    def _end(self, why: object) -> None:
        if not self.answer.done():
            self.answer.set_result(why)

    def reconnected(self, f: asyncio.Future[None]) -> None:
        if not f.cancelled():
            self._end(_RECONNECTED)

    def lost(self, f: asyncio.Future[str]) -> None:
        if not f.cancelled():
            self._end(_LOST)

    def asked_again(self) -> None:
        self._end(_ASKED_AGAIN)

    def expired(self) -> None:
        self._end(_EXPIRED)


class _StreamAck(msgspec.Struct):
    """A JetStream publish ack as the server sends it (PubAck's fields, or an API error)."""

    stream: str = ""
    seq: int = 0
    domain: str | None = None
    duplicate: bool | None = None
    error: dict[str, Any] | None = None


_stream_ack = msgspec.json.Decoder(_StreamAck)
_PIPELINE_MAX_PENDING = 4000  # acks outstanding before a publisher waits (nats-py's publish_async default)


class _Pipeline:
    """Pipelined JetStream publishes of one bus: one reply subscription, each publish a numbered token
    under it and a future that the stream's ack resolves (a PubAck, or the API error the server sent).

    What nats-py's `publish_async` does, without its per-message costs that the bus then paid on top of
    its own (a semaphore wait, a NUID and random token, a done callback per future, the ack parsed by
    `json.loads` and a dataclass built by field introspection): that budget pays for the encoding, the
    de-duplication header and the count every bus publish carries. An API error in the ack fails the
    future (nats-py's callback raises it instead, and the future never completes)."""

    def __init__(self, nc: Client) -> None:
        self.nc = nc
        self.prefix = ""
        self.pending: dict[str, asyncio.Future[PubAck]] = {}
        self.seq = itertools.count(1)
        self.idle = asyncio.Event()  # no ack outstanding
        self.idle.set()
        self.room = asyncio.Event()  # fewer than _PIPELINE_MAX_PENDING outstanding
        self.room.set()
        self._started = False

    async def publish(self, subject: str, data: bytes, headers: dict[str, str]) -> tuple[str, asyncio.Future[PubAck]]:
        if not self._started:  # set before the await: a concurrent first publish makes no second subscription
            self._started, self.prefix = True, self.nc.new_inbox() + "."
            try:
                await self.nc.subscribe(self.prefix + "*", cb=self._on_ack)
            except BaseException:
                self._started = False
                raise
        while len(self.pending) >= _PIPELINE_MAX_PENDING:
            self.room.clear()
            await self.room.wait()
        token = str(next(self.seq))
        future: asyncio.Future[PubAck] = asyncio.get_running_loop().create_future()
        self.pending[token] = future
        self.idle.clear()
        try:
            await self.nc.publish(subject, data, reply=self.prefix + token, headers=headers)
        except BaseException:
            self._settled(token)
            raise
        return token, future

    def expire(self, token: str, what: str) -> None:
        """No ack came for `token` in time: fail its future (a publish the server dropped: permissions)."""
        future = self._settled(token)
        if future is not None and not future.done():
            future.set_exception(BusError(f"{what} not acknowledged in time (is this service allowed to "
                                          f"publish there? see shared/subjects.py permissions)"))

    def _settled(self, token: str) -> asyncio.Future[PubAck] | None:
        future = self.pending.pop(token, None)
        if not self.pending:
            self.idle.set()
        if not self.room.is_set() and len(self.pending) < _PIPELINE_MAX_PENDING:
            self.room.set()
        return future

    async def _on_ack(self, msg: Msg) -> None:
        future = self._settled(msg.subject[len(self.prefix):])
        if future is None or future.done():
            return
        if msg.headers and msg.headers.get("Status") == NO_RESPONDERS_STATUS:  # no stream captures the subject
            future.set_exception(nats.js.errors.NoStreamResponseError())
            return
        try:
            ack = _stream_ack.decode(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            future.set_exception(BusError(f"malformed JetStream ack for a publish: {e}"))
            return
        if ack.error is not None:
            try:
                nats.js.errors.APIError.from_error(ack.error)  # raises the error's own class
            except Exception as e:  # noqa: BLE001 - the server's error, for the publisher
                future.set_exception(e)
            return
        future.set_result(PubAck(stream=ack.stream, seq=ack.seq, domain=ack.domain, duplicate=ack.duplicate))

    async def flush(self) -> None:
        if self.pending:
            await self.idle.wait()


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
        self.reconnects = 0  # reconnects so far: a connection epoch (a service's replies depend on it)
        self.reconnect_hooks: list[Callable[[], None]] = []  # called on each reconnect (ServiceRuntime)
        self._reconnected: asyncio.Future[None] | None = None  # resolved (and dropped) on each reconnect
        self._acks: dict[str, _Watch] = {}  # ack subject of a watched request in flight -> its watch
        self._ack_sub: Subscription | None = None
        self._ack_prefix = ""
        self._ack_seq = itertools.count(1)
        self._pipeline = _Pipeline(nc)
        self._replies = _Replies(nc)
        self.dead: dict[str, str] = {}  # consumer -> why its loop is dead (health is unhealthy then)
        self.on_fatal: Callable[[str], None] | None = None  # the service runtime ends the process

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
        self.reconnects += 1
        for hook in self.reconnect_hooks:
            hook()
        if self._reconnected is not None and not self._reconnected.done():
            self._reconnected.set_result(None)
        self._reconnected = None

    def _reconnect_future(self) -> asyncio.Future[None]:
        """Resolved by the next reconnect (one future shared by every request in flight)."""
        if self._reconnected is None or self._reconnected.done():
            self._reconnected = asyncio.get_running_loop().create_future()
        return self._reconnected

    async def _ack_inbox(self, watch: _Watch) -> str:
        """The subject the responder acknowledges `watch`'s request on: a token under this bus's one ack
        subscription (made on first use; nats-py renews it after a reconnect)."""
        if self._ack_sub is None:
            self._ack_prefix = f"{REQUEST_ACK_PREFIX}.{self.nc.new_inbox().rsplit('.', 1)[-1]}"

            async def _on_ack(ack: Msg) -> None:
                if (w := self._acks.get(ack.subject)) is not None:
                    w.acked(ack.data)

            self._ack_sub = await self.nc.subscribe(f"{self._ack_prefix}.*", cb=_on_ack)
        inbox = f"{self._ack_prefix}.{next(self._ack_seq)}"
        self._acks[inbox] = watch
        return inbox

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
        _, future = await self._pipeline.publish(subject, encode(msg), {"Nats-Msg-Id": msg.id})
        metrics.on_published(self.service, msg)
        return future

    async def publish_checked_later(self, subject: str, msg: Message, *, timeout_s: float = 5.0) -> None:
        """Durable publish whose ack is checked off the caller's path (an endpoint's audit record): the
        message is buffered now, so it leaves in the same write as what was buffered before it (the
        reply), and a refusal, or no ack within `timeout_s`, is logged as an error with the message id."""
        token, future = await self._pipeline.publish(subject, encode(msg), {"Nats-Msg-Id": msg.id})
        metrics.on_published(self.service, msg)
        timer = asyncio.get_running_loop().call_later(timeout_s, self._pipeline.expire, token,
                                                      f"publish to {subject!r}")

        def _checked(f: asyncio.Future[PubAck]) -> None:
            timer.cancel()
            if not f.cancelled() and (e := f.exception()) is not None:
                self.log.error("publish not stored", subject=subject, message_id=msg.id, error=_describe(e))

        future.add_done_callback(_checked)

    async def flush_pipelined(self) -> None:
        """Wait until every pipelined publish of this bus has its ack (or its error)."""
        await self._pipeline.flush()

    async def request(self, subject: str, msg: Message, reply_type: type[M], *, timeout_s: float = 10.0,
                      responder: str | None = None) -> M:
        """Core request/reply. A request in flight when the connection drops is sent again after the
        reconnect: a responder's reply written while the server was down reaches the new server before
        this client has re-subscribed its inbox and is lost, and the caller would wait out `timeout_s`
        (900 s for a verifier's tool call). Requests here (tools, decomposer, health) are idempotent.

        With `responder` (the micro service that serves `subject`, e.g. "toolrunner") the instance that
        takes the request acknowledges it (every ServiceRuntime endpoint does) and is pinged by its micro
        id while the call runs: when it dies, `ResponderLost` comes within seconds, not at `timeout_s`."""
        data, deadline = encode(msg), time.monotonic() + timeout_s
        while True:
            watch = _Watch(self.nc, responder) if responder else None
            headers = {ACK_TO_HEADER: await self._ack_inbox(watch)} if watch else None
            reconnected = self._reconnect_future()
            # One future ends the wait, whichever comes first: the reply, the deadline, a reconnect or the
            # responder's death (the last three as markers); no task, no wait_for around it.
            token, answer = await self._replies.send(subject, data, headers)
            ends = _Ends(answer)
            reconnected.add_done_callback(ends.reconnected)
            if watch:
                watch.lost.add_done_callback(ends.lost)
                watch.ends = ends
                if watch.again:  # a notice that came before this wait was set up
                    ends.asked_again()
            timer = asyncio.get_running_loop().call_later(max(deadline - time.monotonic(), 0.001), ends.expired)
            try:
                got = await answer
            finally:  # also when our caller is cancelled
                timer.cancel()
                self._replies.forget(token)
                reconnected.remove_done_callback(ends.reconnected)
                gone = watch is not None and watch.lost.done() and not watch.lost.cancelled()
                reason = watch.lost.result() if gone else ""  # type: ignore[union-attr]
                if watch:
                    watch.stop()
                    self._acks.pop(headers[ACK_TO_HEADER], None)  # type: ignore[index]
            if got is _LOST and not reconnected.done():
                raise ResponderLost(f"{subject}: {reason}")
            if got is _LOST or got is _RECONNECTED:  # the connection dropped and came back: the reply may be lost
                self.log.info("request resent after a reconnect", subject=subject, message_id=msg.id)
                continue
            if got is _ASKED_AGAIN:
                self.log.info("request resent: the responder's reply was refused", subject=subject,
                              message_id=msg.id, reason=watch.again)  # type: ignore[union-attr]
                continue
            if got is _EXPIRED:
                raise RequestTimeout(f"no reply on {subject!r} within {timeout_s:g} s")
            reply: Msg = got  # type: ignore[assignment]
            if reply.headers and reply.headers.get("Status") == NO_RESPONDERS_STATUS:
                now = time.monotonic()
                if now - self.reconnected_at < _RECONNECT_SETTLE_S and deadline - now > 0.25:
                    await asyncio.sleep(0.25)  # the responder has not re-subscribed yet
                    continue
                raise NoResponders(f"no service answers on {subject!r}. Fix: start it (`kpilot up`, or "
                                   f"`python -m services.<name> --nats URL`).")
            if reply.headers and reply.headers.get(SERVICE_ERROR_HEADER):
                raise ServiceFailed(f"{subject} answered with error {reply.headers.get(SERVICE_ERROR_CODE_HEADER)}: "
                                    f"{reply.headers.get(SERVICE_ERROR_HEADER)}")
            return decode(reply.data, reply_type)  # type: ignore[return-value]

    # ------------------------------------------------------------ consume

    async def consume(self, subject: str, durable: str, handler: Handler[M], msg_type: type[M] | None = None,
                      *, max_deliver: int = DEFAULT_MAX_DELIVER,
                      backoff: tuple[float, ...] = DEFAULT_BACKOFF, ack_wait_s: float = DEFAULT_ACK_WAIT_S,
                      batch: int = 64, new_only: bool = False, fetch_timeout_s: float = 1.0,
                      max_bytes: int = limits.MAX_BYTES, workers: int = 1) -> ConsumerStats:
        """Start a durable pull consumer on `subject`; `handler` gets each decoded message once.

        A message over `max_bytes` or nested too deep (checked on the bytes, before decoding), one that
        does not decode or validate, and one whose handler raised `max_deliver` times (any exception,
        RecursionError and MemoryError included) is dead-lettered on `dlq.<subject>` with the reason and
        terminated; the consumer goes on. A handler that raises `Unavailable` (a dependency is down, not
        the message's fault) gets the message back after an infrastructure back-off, without limit and
        without counting a try, and the consumer pauses that long. While a handler works the message is
        marked in progress every `ack_wait_s / 4`, so `ack_wait_s` only bounds how soon a killed
        service's message is redelivered. A redelivery of a message already handled is acked and dropped.
        nats-py's fetch, once a first message arrived on its long poll, waits for a full `batch` until
        `fetch_timeout_s`: a latency-sensitive consumer (telemetry) passes a short one. `workers` loops pull
        from the one durable consumer, each handling its messages one at a time, so up to `workers`
        messages are in the handler at once (the verifier: one candidate compiles while another is timed).
        """
        if workers < 1:
            raise ValueError(f"consume({durable!r}): workers must be >= 1, got {workers}")
        stream = stream_for(subject.replace(">", "x").replace("*", "x")).name
        # Server-side deliveries are unlimited: infrastructure retries must not use up a message's tries;
        # the tries of a failing handler are counted here (deliveries minus infrastructure retries).
        config = ConsumerConfig(durable_name=durable, filter_subject=subject, ack_policy=AckPolicy.EXPLICIT,
                                ack_wait=ack_wait_s, max_deliver=-1, max_ack_pending=1000,
                                deliver_policy=DeliverPolicy.NEW if new_only else DeliverPolicy.ALL)
        stats = self.consumers.setdefault(durable, ConsumerStats())
        seen: OrderedDict[str, None] = OrderedDict()
        deferred: OrderedDict[str, int] = OrderedDict()  # message id -> infrastructure retries so far
        log = self.log.bind(consumer=durable)
        pause = [0.0]  # monotonic time until which the loop waits (a dependency is down)

        counted = metrics.consumer(self.service, durable)  # the label children, resolved once

        async def _one(raw: Msg, keepalive: _InProgress, lag_due: list[bool]) -> None:
            # The per-message path is what every message pays: the delivery count (a parse of the reply
            # subject) and a logger bound to the message are made only where a failure needs them. The bus
            # lag is observed for the first message handled of each fetched batch (`lag_due`): the oldest.
            stats.received += 1  # its Prometheus counters move once per fetched batch (_loop)
            try:
                msg = decode(raw.data, msg_type, max_bytes=max_bytes)
            except Exception as e:  # noqa: BLE001 - any decode failure (RecursionError included) is the message's
                await self._reject(raw, f"invalid message: {e}{schema_violations(raw.data)}",
                                   raw.metadata.num_delivered, stats, durable)
                return
            if msg.id in seen:
                stats.duplicates += 1
                counted.duplicate.inc()
                await raw.ack()
                return
            t0 = time.monotonic()
            keepalive.current = raw
            try:
                await handler(msg)
            except Unavailable as e:  # not the message's fault: retry later, whatever it took so far
                retries = deferred.get(msg.id, 0)
                delay = e.retry_in_s or INFRA_BACKOFF[min(retries, len(INFRA_BACKOFF) - 1)]
                deferred[msg.id] = retries + 1
                if len(deferred) > _SEEN_IDS:
                    deferred.popitem(last=False)
                log.bind(message_id=msg.id, job_id=msg.job_id, subject=raw.subject).warning(
                    "dependency unavailable, message deferred", reason=str(e), delay_s=delay, retries=retries + 1)
                stats.deferred += 1
                pause[0] = time.monotonic() + delay
                await raw.nak(delay=delay)
                return
            except Exception as e:  # noqa: BLE001 - a handler bug must not crash the service: retry, then dead-letter
                mlog = log.bind(message_id=msg.id, job_id=msg.job_id, subject=raw.subject)
                deliveries = raw.metadata.num_delivered
                tries = deliveries - deferred.get(msg.id, 0)
                if tries >= max_deliver:
                    mlog.exception("handler failed, dead-lettering", deliveries=deliveries)
                    await self._reject(raw, f"handler failed {tries} times: {_describe(e)}", deliveries, stats,
                                       durable)
                else:
                    delay = backoff[min(tries - 1, len(backoff) - 1)]
                    mlog.exception("handler failed, will retry", deliveries=deliveries, delay_s=delay)
                    stats.retried += 1
                    counted.retried.inc()
                    await raw.nak(delay=delay)
                return
            finally:
                keepalive.current = None
            await raw.ack()
            stats.handled += 1
            counted.handler_seconds.observe(time.monotonic() - t0)
            if lag_due[0]:
                lag_due[0] = False
                counted.lag_seconds.observe(max(time.time() - msg.ts, 0.0))
            if deferred:
                deferred.pop(msg.id, None)
            seen[msg.id] = None
            if len(seen) > _SEEN_IDS:
                seen.popitem(last=False)

        async def _subscribe() -> JetStreamContext.PullSubscription:
            sub = await self.js.pull_subscribe(subject, durable=durable, stream=stream, config=config)
            self._subs.append(sub)
            return sub

        first = [await _subscribe()]  # created before consume() returns: new_only sees what follows

        async def _loop() -> None:
            sub = first.pop() if first else await _subscribe()
            failures = 0
            keepalive = _InProgress(ack_wait_s / 4)  # one per loop: a loop handles one message at a time
            ticker = asyncio.create_task(keepalive.run(), name=f"in-progress:{durable}")
            ask = batch  # the next fetch's size: what the last batch left pending (_next_ask)
            try:
                while not self._stopping.is_set():
                    if (wait := pause[0] - time.monotonic()) > 0:
                        await asyncio.sleep(wait)
                    try:
                        msgs = await sub.fetch(ask, timeout=fetch_timeout_s)
                        failures = 0
                    except (TimeoutError, nats.errors.TimeoutError):  # nats-py raises both kinds
                        continue
                    except nats.errors.ConnectionClosedError:
                        return
                    except Exception as e:  # reconnecting, server restarting: wait and fetch again
                        failures += 1
                        if failures >= _FETCH_FAILURES and self.nc.is_connected:
                            raise BusError(f"fetch failed {failures} times while connected: {e!r}") from e
                        log.warning("fetch failed, retrying", error=repr(e))
                        await asyncio.sleep(0.5)
                        continue
                    # received / handled counted once per batch (two locked Prometheus increments per
                    # message saved), exact when the batch ends.
                    received, handled, lag_due = stats.received, stats.handled, [True]
                    try:
                        for raw in msgs:
                            try:
                                await _one(raw, keepalive, lag_due)
                            except Exception as e:  # noqa: BLE001 - an ack lost to a reconnect: redelivered later
                                log.warning("message left for redelivery", error=_describe(e))
                    finally:
                        counted.received.inc(stats.received - received)
                        counted.handled.inc(stats.handled - handled)
                    ask = _next_ask(msgs, batch)
            finally:
                ticker.cancel()
                with contextlib.suppress(ValueError):
                    self._subs.remove(sub)
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()

        def _cancelled(t: asyncio.Task[None]) -> None:  # cancelled by anything but close(): dead
            if t.cancelled() and not self._stopping.is_set():
                self._died(durable, "consumer loop cancelled")

        for n in range(workers):
            name = f"consume:{durable}" + (f":{n}" if n else "")
            task = asyncio.create_task(self._supervise(durable, _loop, stats), name=name)
            task.add_done_callback(_cancelled)
            self._tasks.append(task)
        return stats

    async def _supervise(self, durable: str, loop: Callable[[], Awaitable[None]], stats: ConsumerStats) -> None:
        """Run a consumer loop; when it dies (its durable consumer deleted, a bug), log the cause, start it
        again with back-off, and after `_LOOP_RESTARTS` deaths mark the consumer dead: health turns
        unhealthy and `on_fatal` ends the service, so its supervisor restarts the whole process."""
        log = self.log.bind(consumer=durable)
        for attempt in range(_LOOP_RESTARTS + 1):
            try:
                await loop()
                return  # stopping, or the connection closed
            except Exception as e:  # reported, then restarted
                if self._stopping.is_set():
                    return
                log.exception("consumer loop died", attempt=attempt + 1)
                reason = _describe(e)
            stats.loop_restarts += 1
            await asyncio.sleep(min(0.5 * 2 ** attempt, 10.0))
        self._died(durable, f"consumer loop died {_LOOP_RESTARTS + 1} times, last: {reason}")

    def _died(self, durable: str, reason: str) -> None:
        self.dead[durable] = reason
        self.log.error("consumer dead", consumer=durable, reason=reason)
        if self.on_fatal is not None:
            self.on_fatal(f"consumer {durable}: {reason}")

    async def _reject(self, raw: Msg, reason: str, deliveries: int, stats: ConsumerStats, durable: str) -> None:
        """Dead-letter and terminate `raw`; if the dead letter cannot be stored, leave the message for
        redelivery (nothing is dropped without its reason on record)."""
        try:
            await self.dead_letter(raw, reason, deliveries)
        except Exception as e:  # noqa: BLE001 - the DLQ publish failed (server down): try again later
            self.log.warning("dead letter not stored, message kept", subject=raw.subject, error=_describe(e))
            await raw.nak(delay=DEFAULT_BACKOFF[-1])
            return
        stats.dead_lettered += 1
        metrics.consumer(self.service, durable).dead_lettered.inc()
        await raw.term()

    async def dead_letter(self, raw: Msg, reason: str, deliveries: int = 1) -> None:
        meta = None
        with contextlib.suppress(Exception):
            meta = raw.metadata.sequence.stream
        data = raw.data or b""
        if len(data) > _DLQ_PAYLOAD:  # the dead letter must fit the server's max_payload itself
            reason += (f" (payload cut to its first {_DLQ_PAYLOAD:,} of {len(data):,} bytes; sha256 "
                       f"{hashlib.sha256(data).hexdigest()}; the stream keeps the whole message at seq {meta})")
            data = data[:_DLQ_PAYLOAD]
        letter = DeadLetter(source=self.service, original_subject=raw.subject,
                            payload=data.decode("utf-8", errors="replace"), reason=reason[:_DLQ_REASON],
                            headers={k: str(v)[:1024] for k, v in list((raw.headers or {}).items())[:32]},
                            deliveries=deliveries, stream_seq=meta)
        self.log.warning("dead letter", subject=raw.subject, reason=reason[:_DLQ_REASON])
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
