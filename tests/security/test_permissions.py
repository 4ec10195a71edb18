"""The permission matrix against a real nats-server started with the rendered config: every user x every
subject family x every JetStream API verb, each tried for real, the outcome compared with the expected
allow/deny of the table below (written from the issue, not derived from shared/subjects.py), and 0
unexpected allows. Plus the attacks of issue 18 that the permissions stop, each re-run.

An outcome is `allow` when the server did it (a PubAck, an API answer without error, a subscription that
drew no permissions violation), `deny` when the server refused it for permissions, `refused` when the
permissions let it through and JetStream itself answered with an error (counted as not allowed).
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import nats
import pytest
from nats.aio.client import Client

from shared.natsserver import EmbeddedServer, free_port
from shared.provision import provision
from shared.signing import check_patch, make_keypair, publish_trusted_key
from shared.subjects import KV_BUCKETS, OBJECT_STORES, SERVICE_NAMES, STREAMS

ANON = "anonymous"  # no credentials at all: the server's no_auth_user
USERS = ("admin", *SERVICE_NAMES, "operator", ANON)
READERS = {  # who reads which stream (consumers, fetch): the services' own, and the operator everything
    "OPS": set(SERVICE_NAMES), "TELEMETRY": {"telemetry"},
    "EVENTS": {"planner", "critic", "telemetry"},  # critic: get only; telemetry: live capture asks
    "JOBS": {"planner", "critic"}, "CANDIDATES": {"verifier", "critic"}, "VERDICTS": {"planner", "critic"},
    "PATCHES": {"planner"}, "FAILURES": {"planner"}, "AUDIT": set(), "DLQ": set(),
    "CAPTURE": {"telemetry", "planner"},  # live capture: telemetry asks and registers, the planner opens jobs
    "KV_jobs": {"planner"}, "KV_kernels": {"planner", "critic", "telemetry"}, "KV_trust": set(SERVICE_NAMES),
    "OBJ_artifacts": {"toolrunner"},
}
PUBLISHERS = {  # subject -> who may store a message there
    "patches.verified.k": {"critic"}, "patches.proposed.k": {"critic"}, "patches.rejected.k": {"critic"},
    "verdicts.micro.k": {"verifier"}, "candidates.k": {"planner"}, "jobs.j": {"planner"},
    "failures.k": {"critic"}, "events.state.x.n.g": {"telemetry"},
    "telemetry.state.n.g": {"telemetry", "operator", ANON},  # the operator replays recorded traces
    "optimize.request": {"operator", ANON}, "ops.heartbeat.ping": {"operator", ANON},
    "audit.toolrunner": {"toolrunner"}, "audit.decomposer": {"decomposer"},
    # Live capture: telemetry asks a workload and announces registrations; the workload (the SDK connects
    # as operator) answers with the captured task. The planner, which runs LLM output, may do neither.
    "capture.request.n": {"telemetry"}, "capture.registered.k": {"telemetry"},
    "capture.task.k": {"operator", ANON},
}
KV_WRITERS = {  # bucket.key -> who may put or delete it
    "jobs.j1": {"planner"}, "kernels.verified.k": {"critic"}, "kernels.task.k": {"operator", ANON, "telemetry"},
    "kernels.k": {"operator", ANON, "telemetry"}, "trust.critic": set(),  # telemetry: captured tasks
}
ALL_STREAMS = (*(s.name for s in STREAMS), *(f"KV_{b.name}" for b in KV_BUCKETS),
               *(f"OBJ_{o.name}" for o in OBJECT_STORES))


def expected(user: str, verb: str, target: str) -> bool:
    """The table: True = must be allowed, False = must not be."""
    if user == "admin":
        return True
    if verb in ("stream.create", "stream.update.republish", "stream.delete", "stream.purge", "msg.delete",
                "consumer.delete", "sub.plain", "sub.queue.other"):
        return False  # only admin configures JetStream; tool subjects are served only in the runner's queues
    if verb == "consumer.create":
        return user in ("operator", ANON) or user in READERS.get(target, set()) or \
            (target == "OPS" and user in SERVICE_NAMES)
    if verb == "publish":
        return user in PUBLISHERS[target]
    if verb in ("kv.put", "kv.delete"):
        return user in KV_WRITERS[target]
    if verb == "object.put":
        return user == "toolrunner"
    if verb == "sub.queue.toolrunner":
        return user == "toolrunner"
    raise AssertionError(f"no expectation for {verb}")


class Probe:
    """One client of one user that tries an operation and reports allow / deny / refused."""

    def __init__(self, nc: Client, errors: list[str]) -> None:
        self.nc, self.errors = nc, errors

    def _seen(self, what: str, subject: str) -> bool:
        needle = f'{what} to "{subject}"'.lower()
        hit = any(needle in e for e in self.errors)
        self.errors[:] = [e for e in self.errors if needle not in e]
        return hit

    async def _violated(self, what: str, subject: str) -> bool:
        await self.nc.flush(timeout=5)  # the server answers PING after any -ERR for what came before
        await asyncio.sleep(0.01)
        return self._seen(what, subject)

    async def request(self, subject: str, payload: bytes, headers: dict[str, str] | None = None) -> str:
        inbox = self.nc.new_inbox()
        sub = await self.nc.subscribe(inbox)
        try:
            await self.nc.publish(subject, payload, reply=inbox, headers=headers)
            if await self._violated("publish", subject):
                return "deny"
            for _ in range(50):  # an answer, or a permissions violation that came late
                try:
                    msg = await sub.next_msg(timeout=0.1)
                    break
                except nats.errors.TimeoutError:
                    if self._seen("publish", subject):
                        return "deny"
            else:
                return "refused"  # no stream captured it and nobody answered
            if msg.headers and msg.headers.get("Status") == "503":
                return "refused"
            body = json.loads(msg.data) if msg.data else {}
            return "refused" if isinstance(body, dict) and body.get("error") else "allow"
        finally:
            await sub.unsubscribe()

    async def subscribe(self, subject: str, queue: str = "") -> str:
        sub = await self.nc.subscribe(subject, queue=queue)
        denied = await self._violated("subscription", subject)
        if not denied:
            await sub.unsubscribe()
        return "deny" if denied else "allow"


async def connect(server: EmbeddedServer, user: str) -> Probe:
    errors: list[str] = []

    async def _err(e: Exception) -> None:
        errors.append(str(e).lower().replace("permissions violation for ", ""))

    url = server.plain_url() if user == ANON else server.url(user)
    nc = await nats.connect(url, error_cb=_err, allow_reconnect=False, name=f"probe-{user}")
    probe = Probe(nc, errors)
    return probe


def _republish(stream: str, subjects: list[str]) -> bytes:
    """A stream config that copies every stored message to `patches.verified.*` (the issue's attack)."""
    dest = "republished.>" if stream == "PATCHES" else "patches.verified.>"  # no cycle on PATCHES itself
    return json.dumps({"name": stream, "subjects": subjects, "storage": "file", "retention": "limits",
                       "republish": {"src": ">", "dest": dest}}).encode()


async def run_ops(p: Probe, user: str) -> list[tuple[str, str, str]]:
    """Every operation of the matrix for one user; (verb, target, outcome). Admin's destructive ones
    come last, since they happen."""
    out: list[tuple[str, str, str]] = []
    js = "$JS.API"
    tag = user.replace("-", "")
    for subject in PUBLISHERS:
        out.append(("publish", subject, await p.request(subject, b'{"forged": true}')))
    for key in KV_WRITERS:
        bucket, _, k = key.partition(".")
        out.append(("kv.put", key, await p.request(f"$KV.{bucket}.{k}", b"forged")))
        out.append(("kv.delete", key, await p.request(f"$KV.{bucket}.{k}", b"", {"KV-Operation": "DEL"})))
    for o in OBJECT_STORES:
        out.append(("object.put", o.name, await p.request(f"$O.{o.name}.C.forged{tag}", b"chunk")))
    out.append(("sub.queue.toolrunner", "tools.run_correctness",
                await p.subscribe("tools.run_correctness", "toolrunner")))
    out.append(("sub.queue.other", "tools.run_correctness", await p.subscribe("tools.run_correctness", "evil")))
    out.append(("sub.plain", "tools.>", await p.subscribe("tools.>")))
    out.append(("stream.create", "EVIL", await p.request(f"{js}.STREAM.CREATE.EVIL{tag}",
                                                         _republish(f"EVIL{tag}", [f"evil{tag}.>"]))))
    for s in ALL_STREAMS:
        cfg = json.dumps({"name": f"read{tag}", "durable_name": f"read{tag}", "ack_policy": "explicit",
                          "deliver_policy": "all"})
        create = json.dumps({"stream_name": s, "config": json.loads(cfg)}).encode()
        out.append(("consumer.create", s, await p.request(f"{js}.CONSUMER.CREATE.{s}.read{tag}", create)))
    for s in ALL_STREAMS:
        subjects = next((list(x.subjects) for x in STREAMS if x.name == s), [f"$KV.{s[3:]}.>"])
        out.append(("stream.update.republish", s, await p.request(f"{js}.STREAM.UPDATE.{s}", _republish(s, subjects))))
        out.append(("consumer.delete", s, await p.request(f"{js}.CONSUMER.DELETE.{s}.victim", b"")))
        out.append(("msg.delete", s, await p.request(f"{js}.STREAM.MSG.DELETE.{s}", b'{"seq": 1}')))
        out.append(("stream.purge", s, await p.request(f"{js}.STREAM.PURGE.{s}", b"{}")))
    for s in ALL_STREAMS:
        out.append(("stream.delete", s, await p.request(f"{js}.STREAM.DELETE.{s}", b"")))
    return out


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[EmbeddedServer]:
    srv = EmbeddedServer(tmp_path / "state", port=free_port())
    srv.start()
    nc = await nats.connect(srv.url("admin"))
    js = nc.jetstream()
    await provision(js)
    _, pub = make_keypair(tmp_path / "state" / "signing")
    await publish_trusted_key(js, pub.read_bytes().strip())
    for s in ALL_STREAMS:  # a durable per stream, so consumer deletes have something to hit
        await nc.request(f"$JS.API.CONSUMER.CREATE.{s}.victim", json.dumps(
            {"stream_name": s, "config": {"name": "victim", "durable_name": "victim", "ack_policy": "explicit"}}
        ).encode(), timeout=5)
    await js.publish("audit.toolrunner", b'{"seed": 1}')  # AUDIT and DLQ are not empty
    await js.publish("dlq.x", b'{"seed": 1}')
    await nc.close()
    try:
        yield srv
    finally:
        srv.stop()


def _stream_has_verb_target(verb: str, target: str) -> bool:
    return not (verb == "consumer.delete" and target.startswith("EVIL"))


@pytest.mark.slow
async def test_permission_matrix_has_no_unexpected_allow(server: EmbeddedServer) -> None:
    rows: list[tuple[str, str, str, str, bool]] = []
    for user in USERS:  # admin last: its deletes really happen
        if user == "admin":
            continue
        p = await connect(server, user)
        rows += [(user, v, t, o, expected(user, v, t)) for v, t, o in await run_ops(p, user)]
        await p.nc.close()
    p = await connect(server, "admin")
    rows += [("admin", v, t, o, expected("admin", v, t)) for v, t, o in await run_ops(p, "admin")]
    await p.nc.close()

    unexpected_allow = [r for r in rows if r[3] == "allow" and not r[4]]
    # Admin's probes pass the permissions; JetStream itself refuses a few (KV streams deny message
    # deletes, a consumer already deleted): for admin, only a permissions denial is unexpected.
    unexpected_deny = [r for r in rows if r[4] and (r[3] == "deny" if r[0] == "admin" else r[3] != "allow")]
    verbs = sorted({r[1] for r in rows})
    print(f"\npermission matrix: {len(rows)} operations, {len(USERS)} users x {len(verbs)} verbs")
    print(f"{'verb':<24}" + "".join(f"{u[:10]:>11}" for u in USERS))
    for verb in verbs:
        cells = []
        for u in USERS:
            mine = [r for r in rows if r[0] == u and r[1] == verb]
            allowed = sum(r[3] == "allow" for r in mine)
            cells.append(f"{allowed}/{len(mine)}")
        print(f"{verb:<24}" + "".join(f"{c:>11}" for c in cells))
    print(f"unexpected allows: {len(unexpected_allow)}; unexpected denies: {len(unexpected_deny)}")
    for r in unexpected_allow + unexpected_deny:
        print("  ", r)
    assert unexpected_allow == [], unexpected_allow
    assert unexpected_deny == [], unexpected_deny


async def _count(server: EmbeddedServer, stream: str) -> int:
    nc = await nats.connect(server.url("admin"))
    try:
        return (await nc.jetstream().stream_info(stream)).state.messages
    finally:
        await nc.close()


@pytest.mark.parametrize("user", ["planner", ANON])
async def test_a_stream_republish_cannot_store_a_forged_verified_patch(server: EmbeddedServer, user: str) -> None:
    """Issue 18: the planner and an anonymous client got forged patches stored via a republish config."""
    p = await connect(server, user)
    before = await _count(server, "PATCHES")
    assert await p.request("$JS.API.STREAM.UPDATE.JOBS", _republish("JOBS", ["optimize.request", "jobs.>"])) \
        == "deny"
    assert await p.request("$JS.API.STREAM.CREATE.EVIL", _republish("EVIL", ["evil.>"])) == "deny"
    # What would have been republished: a message the user may store (its PubAck means it is stored).
    subject = "jobs.j-forged" if user == "planner" else "optimize.request"
    assert await p.request(subject, b'{"kind": "verified_patch"}') == "allow"
    assert await _count(server, "PATCHES") == before
    await p.nc.close()


@pytest.mark.parametrize("user", [*SERVICE_NAMES, "operator", ANON])
async def test_nobody_but_admin_deletes_streams_or_purges_audit(server: EmbeddedServer, user: str) -> None:
    p = await connect(server, user)
    audit = await _count(server, "AUDIT")
    assert audit >= 1
    assert await p.request("$JS.API.STREAM.PURGE.AUDIT", b"{}") == "deny"
    assert await p.request("$JS.API.STREAM.MSG.DELETE.AUDIT", b'{"seq": 1}') == "deny"
    assert await p.request("$JS.API.STREAM.DELETE.AUDIT", b"") == "deny"
    assert await p.request("$JS.API.STREAM.DELETE.PATCHES", b"") == "deny"
    await p.nc.close()
    assert await _count(server, "AUDIT") == audit


async def test_anonymous_cannot_answer_tool_requests(server: EmbeddedServer) -> None:
    """Issue 18: an anonymous client joined the toolrunner's queue group and answered 6 of 10 requests."""
    runner, anon, verifier = (await connect(server, "toolrunner"), await connect(server, ANON),
                              await connect(server, "verifier"))

    async def real(msg) -> None:  # type: ignore[no-untyped-def]
        await msg.respond(b'{"from": "toolrunner"}')

    async def forged(msg) -> None:  # type: ignore[no-untyped-def]
        await msg.respond(b'{"from": "attacker", "passed": true}')

    await runner.nc.subscribe("tools.run_correctness", queue="toolrunner", cb=real)
    await anon.nc.subscribe("tools.run_correctness", queue="toolrunner", cb=forged)
    assert await anon._violated("subscription", "tools.run_correctness")
    await anon.nc.subscribe("tools.>", cb=forged)
    assert await anon._violated("subscription", "tools.>")
    await runner.nc.flush()
    answers = [json.loads((await verifier.nc.request("tools.run_correctness", b"{}", timeout=5)).data)["from"]
               for _ in range(10)]
    assert answers == ["toolrunner"] * 10
    for p in (runner, anon, verifier):
        await p.nc.close()


async def test_a_service_cannot_answer_for_another(server: EmbeddedServer) -> None:
    """The planner runs LLM output: it may not serve tools, analysis, health, or reply to a subject of
    its choosing (responses only to the reply subject of a request it received)."""
    p = await connect(server, "planner")
    for subject in ("tools.compile", "decomposer.analyze", "health.critic", "profile.kernel"):
        assert await p.subscribe(subject) == "deny", subject
    assert await p.request("_INBOX.someone.else", b"forged") == "deny"
    await p.nc.close()


def test_every_file_holding_a_secret_is_0600(server: EmbeddedServer) -> None:
    state = server.state_dir
    secrets_ = [state / "users.json", server.conf_path, server.creds_file("critic"),
                state / "signing" / "critic.key"]
    for path in secrets_:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == 0o600, f"{path} is {mode:o}"
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    # A user other than the owner cannot read them (root in this container bypasses modes: check bits).
    assert not any(stat.S_IMODE(p.stat().st_mode) & 0o077 for p in secrets_)
    assert "127.0.0.1:" in next(line for line in server.conf_path.read_text().splitlines()
                                if line.startswith("http:"))


async def test_reply_subject_injection_is_stored_but_fails_the_signature_check(server: EmbeddedServer) -> None:
    """The server answers a JetStream API request on whatever reply subject the client names, and a
    stream that captures that subject stores the answer: permissions cannot stop it (the server
    publishes it, not the client). What it stores is not signed by the critic, so every subscriber's
    check (shared/signing.py) rejects it."""
    p = await connect(server, ANON)
    before = await _count(server, "PATCHES")
    await p.nc.publish("$JS.API.STREAM.INFO.OPS", b"", reply="patches.verified.injected")
    await p.nc.flush()
    nc = await nats.connect(server.url("admin"))
    js = nc.jetstream()
    for _ in range(50):
        if (await js.stream_info("PATCHES")).state.messages > before:
            break
        await asyncio.sleep(0.1)
    info = await js.stream_info("PATCHES")
    from shared.signing import trusted_key
    key = await trusted_key(js)
    assert key is not None
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        raw = await js.get_msg("PATCHES", seq)
        check = check_patch(raw.data or b"", key)
        assert not check.ok, (raw.subject, check)
    print(f"\nreply-subject injection: PATCHES went {before} -> {info.state.messages} messages; "
          f"each fails the signature check")
    await nc.close()
    await p.nc.close()


async def test_admin_password_is_in_no_service_creds_file(server: EmbeddedServer) -> None:
    users = msgspec.json.decode((server.state_dir / "users.json").read_bytes())["passwords"]
    for name in SERVICE_NAMES:
        text = server.creds_file(name).read_text()
        assert users["admin"] not in text and users[name] in text
    assert os.stat(server.creds_file("admin")).st_mode & 0o077 == 0


async def test_no_one_takes_or_drops_another_services_work(server: EmbeddedServer) -> None:
    """A service's durable consumers are its own: another identity that reads the same stream can
    neither fetch from them (stealing the verifier's candidates), ack on them (dropping them) nor
    redefine them; the owner can."""
    from shared.subjects import owned_durables
    admin = await nats.connect(server.url("admin"))
    for _, stream, durable in owned_durables():
        await admin.request(f"$JS.API.CONSUMER.CREATE.{stream}.{durable}", json.dumps(
            {"stream_name": stream, "config": {"name": durable, "durable_name": durable,
                                               "ack_policy": "explicit"}}).encode(), timeout=5)
    await admin.close()
    probes = {u: await connect(server, u) for u in USERS if u != "admin"}
    wrong: list[tuple[str, str, str, str]] = []
    checked = 0
    for owner, stream, durable in owned_durables():
        for user, p in probes.items():
            if not (user in ("operator", ANON) or user in READERS[stream] or stream == "OPS"):
                continue  # cannot read the stream at all (the matrix covers that)
            mine = user == owner
            fetch = await p.request(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}", b'{"batch":1,"no_wait":true}')
            await p.nc.publish(f"$JS.ACK.{stream}.{durable}.1.1.1.0.0", b"+ACK")
            ack = "deny" if await p._violated("publish", f"$JS.ACK.{stream}.{durable}.1.1.1.0.0") else "allow"
            redefine = await p.request(f"$JS.API.CONSUMER.CREATE.{stream}.{durable}", json.dumps(
                {"stream_name": stream, "config": {"name": durable, "durable_name": durable,
                                                   "ack_policy": "none", "deliver_subject": "stolen"}}).encode())
            for verb, got in (("fetch", fetch), ("ack", ack), ("redefine", redefine)):
                checked += 1
                if (got == "allow") != mine and not (mine and verb == "redefine"):
                    wrong.append((user, verb, stream, durable))
    for p in probes.values():
        await p.nc.close()
    print(f"\ndurable ownership: {checked} checks, {len(wrong)} wrong")
    assert checked > 100 and wrong == [], wrong
