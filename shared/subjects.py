"""The one table of subjects, JetStream streams, KV buckets, object stores and per-service permissions.

Provisioning (`shared.provision`) and the nats-server config (`shared.natsserver`) are both generated from
this module, so what a service may publish is enforced by the server, not by convention: the planner,
which executes what an LLM suggests, may publish `candidates.>` but never `patches.verified.>`.
"""

from __future__ import annotations

from typing import Literal

import msgspec

# ---------------------------------------------------------------- subjects

HEARTBEAT_PING = "ops.heartbeat.ping"
HEARTBEAT_ACK = "ops.heartbeat.ack"  # .<service>
OPTIMIZE_REQUEST = "optimize.request"
OPTIMIZE_CANCEL = "optimize.cancel"  # CancelRequest: only the planner ends jobs
DECOMPOSER_ANALYZE = "decomposer.analyze"
# Per-kernel ncu counters on request (telemetry's endpoint). Not under `telemetry.>`: the TELEMETRY stream
# would capture the request and JetStream would answer it with a PubAck before the endpoint replies.
KERNEL_PROFILE = "profile.kernel"
TOOLS = "tools"  # tools.<name>, NATS micro endpoints
DLQ_PREFIX = "dlq"
# A service acknowledges a watched request (shared/bus.py) on the caller's `_KPACK.<nuid>` inbox named in a
# header: replies themselves go only through allow_responses, so no service may publish on `_INBOX.>`.
REQUEST_ACK_PREFIX = "_KPACK"


def telemetry_subject(node: str, gpu: str) -> str:
    return f"telemetry.state.{node}.{gpu}"


def kernel_profile_subject(node: str, kernel: str) -> str:
    """One kernel's ncu counters (a StateVector with space "kernel:<name>"), published on request."""
    return f"telemetry.kernel.{token(node)}.{token(kernel)}"


def state_event_subject(kind: str, node: str, gpu: str) -> str:
    return f"events.state.{kind}.{node}.{gpu}"


def sample_subject(node: str, gpu: str) -> str:
    """Raw device samples (DeviceSample) of one GPU; a telemetry instance consumes a shard of nodes."""
    return f"telemetry.samples.{token(node)}.{token(gpu)}"


def launches_subject(node: str) -> str:
    """Launch telemetry (LaunchBatch) of the workloads on one node, published by the SDK."""
    return f"telemetry.launches.{token(node)}"


def capture_request_subject(node: str) -> str:
    """CaptureRequest for the workload SDK on one node (published by telemetry)."""
    return f"capture.request.{token(node)}"


def captured_task_subject(kernel: str) -> str:
    """CapturedTaskSource: a task captured in a workload process (published by the SDK)."""
    return f"capture.task.{token(kernel)}"


def capture_registered_subject(kernel: str) -> str:
    """CaptureRegistered: a captured task registered, or refused with the reason (published by telemetry)."""
    return f"capture.registered.{token(kernel)}"


def job_subject(job_id: str) -> str:
    return f"jobs.{job_id}"


def candidate_subject(kernel: str) -> str:
    return f"candidates.{token(kernel)}"


def verdict_subject(layer: str, kernel: str) -> str:
    return f"verdicts.{layer}.{token(kernel)}"


PatchOutcome = Literal["verified", "proposed", "rejected", "rollback"]
# `verified`: a speedup measured on the target device whose CI clears the policy; `proposed`: correct
# but not measured there. Only the critic may publish either (its `patches.>`; no other role has it).
PATCH_OUTCOMES: tuple[str, ...] = ("verified", "proposed", "rejected", "rollback")


def patch_subject(outcome: PatchOutcome, kernel: str) -> str:
    return f"patches.{outcome}.{token(kernel)}"


def failure_subject(kernel: str) -> str:
    return f"failures.{token(kernel)}"


def tool_subject(name: str) -> str:
    return f"{TOOLS}.{name}"


def audit_subject(service: str) -> str:
    return f"audit.{service}"


def dlq_subject(original: str) -> str:
    return f"{DLQ_PREFIX}.{original}"


def token(name: str) -> str:
    """A name made safe as one subject token (no dots, spaces or wildcards)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name) or "_"


# ---------------------------------------------------------------- streams, buckets, stores


class Stream(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    subjects: tuple[str, ...]
    description: str
    retention: Literal["limits", "interest", "workqueue"] = "limits"
    storage: Literal["file", "memory"] = "file"
    max_age_s: float = 7 * 86400
    duplicate_window_s: float = 120.0  # JetStream de-duplication window for Nats-Msg-Id
    # 256 MiB per stream keeps all eleven under the server's 8 GB file-store cap with room to spare.
    max_bytes: int = 256 << 20


STREAMS: tuple[Stream, ...] = (
    Stream(name="OPS", subjects=("ops.>",), description="heartbeats and operator notices",
           max_age_s=3600, max_bytes=64 << 20),
    # One state vector per GPU per period; an hour is enough for replay and the 5-minute trend.
    Stream(name="TELEMETRY", subjects=("telemetry.>",), description="state vectors and launch telemetry",
           max_age_s=3600, max_bytes=512 << 20),
    Stream(name="EVENTS", subjects=("events.>",), description="state-change events"),
    # Capture requests, captured task sources (size-limited, services/telemetry/capture_admit.py) and
    # registrations: a day is enough to answer a request; the registered task itself lives on disk.
    Stream(name="CAPTURE", subjects=("capture.>",), description="live capture requests, captured tasks, "
           "registrations", max_age_s=86400, max_bytes=256 << 20),
    Stream(name="JOBS", subjects=("optimize.request", "optimize.cancel", "jobs.>"),
           description="optimize and cancel requests, job updates"),
    Stream(name="CANDIDATES", subjects=("candidates.>",), description="candidate versions"),
    Stream(name="VERDICTS", subjects=("verdicts.>",), description="verdicts per funnel layer"),
    Stream(name="PATCHES", subjects=("patches.>",), description="verified, proposed, rejected and rolled-back patches",
           max_age_s=365 * 86400),
    Stream(name="FAILURES", subjects=("failures.>",), description="failure records for the classifier",
           max_age_s=365 * 86400),
    Stream(name="AUDIT", subjects=("audit.>",), description="every tool call", max_age_s=30 * 86400),
    Stream(name="DLQ", subjects=("dlq.>",), description="dead letters with their reasons",
           max_age_s=30 * 86400),
)


# Where telemetry stores captured tasks (`<KPILOT_STATE>/captured/<sha256>.py`) and the toolrunner reads them.
CAPTURED_DIR = "captured"

TRUST_BUCKET = "trust"


class Bucket(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str
    history: int = 5


KV_BUCKETS: tuple[Bucket, ...] = (
    Bucket(name="kernels", description="kernel registry: name -> task and current version"),
    Bucket(name="jobs", description="job state, one key per job"),
    # Written by admin only (`kpilot up`): the public keys subscribers check signed patches with.
    Bucket(name=TRUST_BUCKET, description="trusted public keys (critic's Ed25519 key), admin-written"),
)

OBJECT_STORES: tuple[Bucket, ...] = (
    Bucket(name="artifacts", description="content-addressed compiler and profiler artifacts", history=1),
)


def stream_for(subject: str) -> Stream:
    """The stream that captures `subject`; a subject outside every stream is a programming error."""
    for stream in STREAMS:
        if any(_matches(pattern, subject) for pattern in stream.subjects):
            return stream
    raise KeyError(f"no stream captures subject {subject!r}; add it to shared/subjects.py STREAMS")


def _matches(pattern: str, subject: str) -> bool:
    p, s = pattern.split("."), subject.split(".")
    for i, tok in enumerate(p):
        if tok == ">":
            return len(s) > i
        if i >= len(s) or (tok != "*" and tok != s[i]):
            return False
    return len(p) == len(s)


def subject_matches(pattern: str, subject: str) -> bool:
    """NATS wildcard match: `*` one token, `>` one or more trailing tokens."""
    return _matches(pattern, subject)


# ---------------------------------------------------------------- permissions
#
# Least privilege, enforced by the server. Provisioning (streams, KV buckets, the object store) runs as
# `admin`, the only identity with stream create/update/delete/purge and message delete: so nobody else
# can configure a stream's republish, delete a stream or purge AUDIT. Each other identity gets, from its
# Role below, publish on the subjects it produces, the read side of the JetStream API (stream info,
# consumers, fetch, ack, message get) on the streams it reads, writes on its own KV keys and object store,
# and the core subscriptions it serves; tool requests are answered only by the toolrunner's queue groups.
# Adding a subject with its publisher is one line: extend that service's `publish` (and, if it is new
# and durable, add it to a stream in STREAMS above).

ADMIN = "admin"
OPERATOR_NAME = "operator"


class Role(msgspec.Struct, frozen=True, kw_only=True):
    """What one identity does on the bus; `permissions()` turns it into the server's allow-lists."""

    publish: tuple[str, ...] = ()  # subjects it publishes (durably or core requests)
    serves: tuple[str, ...] = ()  # core subscriptions: request subjects it answers (any queue group)
    queues: tuple[str, ...] = ()  # "subject queue": subscriptions allowed only in that queue group
    reads: tuple[str, ...] = ()  # streams it reads: stream info, consumers, fetch, ack, message get
    gets: tuple[str, ...] = ()  # streams it only looks messages up in (message get by subject/sequence)
    # "STREAM:durable" consumers it owns (its bus.consume calls): nobody else may create, fetch from or
    # ack on them, so no one steals or drops another service's work. `<service>-heartbeat` on OPS is added.
    durables: tuple[str, ...] = ()
    kv_read: tuple[str, ...] = ()  # KV buckets it reads
    kv_write: tuple[str, ...] = ()  # "bucket" or "bucket.key-pattern": keys it may put/delete
    obj_read: tuple[str, ...] = ()
    obj_write: tuple[str, ...] = ()  # object stores it owns (puts only: no purge, no delete)
    subscribe_all: bool = False  # core-subscribe every subject except what others serve (the operator)


_ALL_STREAMS = tuple(s.name for s in STREAMS)

ROLES: dict[str, Role] = {
    # Telemetry also runs the live capture path: it asks a workload for a hot kernel's task, stores the
    # answer, has the toolrunner load it (`tools.load_task`) and registers it like `kpilot register`.
    "telemetry": Role(publish=("telemetry.>", "events.state.>", "tools.>", "capture.request.>",
                               "capture.registered.>"), serves=(KERNEL_PROFILE,),
                      reads=("TELEMETRY", "EVENTS", "CAPTURE"),
                      durables=("TELEMETRY:telemetry-launches-all", "TELEMETRY:telemetry-samples-all",
                                "EVENTS:telemetry-capture-asks", "CAPTURE:telemetry-captures"),
                      kv_read=("kernels",), kv_write=("kernels.*", "kernels.task.>")),
    "decomposer": Role(publish=("tools.>", "audit.decomposer"), serves=(DECOMPOSER_ANALYZE,)),
    # The planner runs what an LLM proposes: it may publish candidates, never verdicts or patches.
    "planner": Role(publish=("jobs.>", "candidates.>", "tools.>", DECOMPOSER_ANALYZE),
                    reads=("EVENTS", "JOBS", "VERDICTS", "PATCHES", "FAILURES", "CAPTURE"),
                    durables=("JOBS:planner-requests", "JOBS:planner-cancels", "EVENTS:planner-events",
                              "VERDICTS:planner-verdicts", "CAPTURE:planner-captures"),
                    kv_read=("jobs", "kernels"), kv_write=("jobs",)),
    "toolrunner": Role(publish=("audit.toolrunner",), serves=("toolrunner.>",),
                       queues=("tools.> toolrunner", "tools.> toolrunner-gpu"),
                       obj_read=("artifacts",), obj_write=("artifacts",)),
    # The verifier looks up a candidate's job (its last JobUpdate) to withdraw candidates of ended jobs.
    "verifier": Role(publish=("verdicts.>", "tools.>"), reads=("CANDIDATES",), gets=("JOBS",),
                     durables=("CANDIDATES:verifier",)),
    # The critic also reads optimize requests: they are the root of a chain that no telemetry started;
    # it looks up (message get only) the TELEMETRY sample that started a chain. It owns the
    # `verified.*` keys of `kernels`, and `patches.>` covers `patches.proposed.*` too.
    "critic": Role(publish=("patches.>", "failures.>"),
                   reads=("VERDICTS", "CANDIDATES", "EVENTS", "JOBS"), gets=("TELEMETRY",),
                   durables=("CANDIDATES:critic-candidates", "JOBS:critic-jobs", "JOBS:critic-requests",
                             "EVENTS:critic-events", "VERDICTS:critic-verdicts"),
                   kv_read=("kernels",), kv_write=("kernels.verified.>",)),
    # The operator (kpilot CLI and any client that connects without credentials) reads and tails every
    # stream and asks for work: optimize requests, tool and analysis requests, telemetry to replay, the
    # heartbeat ping, kernel registrations (`<kernel>` and `task.<kernel>` keys of `kernels`), and, as the
    # workload SDK connects as operator, launch telemetry and captured tasks (`capture.task.>`). It
    # publishes no verdicts, candidates or patches and answers nothing.
    OPERATOR_NAME: Role(publish=(OPTIMIZE_REQUEST, OPTIMIZE_CANCEL, "tools.>", "toolrunner.>", DECOMPOSER_ANALYZE,
                                 KERNEL_PROFILE, "telemetry.>", HEARTBEAT_PING, "health.>", "capture.task.>"),
                        reads=_ALL_STREAMS, kv_read=tuple(b.name for b in KV_BUCKETS),
                        kv_write=("kernels.*", "kernels.task.>"), obj_read=tuple(o.name for o in OBJECT_STORES),
                        subscribe_all=True),
}

SERVICE_NAMES: tuple[str, ...] = ("telemetry", "decomposer", "planner", "toolrunner", "verifier", "critic")
USERS: tuple[str, ...] = (ADMIN, *SERVICE_NAMES, OPERATOR_NAME)


class Permissions(msgspec.Struct, frozen=True, kw_only=True):
    publish: tuple[str, ...]
    subscribe: tuple[str, ...]
    publish_deny: tuple[str, ...] = ()
    subscribe_deny: tuple[str, ...] = ()
    allow_responses: bool = False  # may publish one reply to the reply subject of a request it received


_JS = "$JS.API"


def stream_read_api(stream: str) -> tuple[str, ...]:
    """The read side of the JetStream API on one stream: info, consumers (ephemeral, ordered, durable
    by name), fetch, ack, flow control, message get. Never update, delete, purge or message delete."""
    return (f"{_JS}.STREAM.INFO.{stream}", f"{_JS}.CONSUMER.CREATE.{stream}", f"{_JS}.CONSUMER.CREATE.{stream}.>",
            f"{_JS}.CONSUMER.DURABLE.CREATE.{stream}.*", f"{_JS}.CONSUMER.INFO.{stream}.*",
            f"{_JS}.CONSUMER.MSG.NEXT.{stream}.*", f"{_JS}.STREAM.MSG.GET.{stream}",
            f"{_JS}.DIRECT.GET.{stream}", f"{_JS}.DIRECT.GET.{stream}.>", f"$JS.ACK.{stream}.>",
            f"$JS.FC.{stream}.>")


def kv_stream(bucket: str) -> str:
    return f"KV_{bucket}"


def obj_stream(store: str) -> str:
    return f"OBJ_{store}"


# Every identity: account info and stream lookup by subject (read-only), heartbeat acks, dead letters,
# micro-service discovery replies, and inbox subscriptions for replies and push consumers.
_COMMON_PUB = (f"{_JS}.INFO", f"{_JS}.STREAM.NAMES", "dlq.>")
_COMMON_SUB = ("_INBOX.>", f"{REQUEST_ACK_PREFIX}.>")
# What a service does on top: answer heartbeats and micro discovery; read OPS (heartbeat consumer).
_SERVICE_PUB = ("ops.heartbeat.ack.>", "$SRV.>", f"{REQUEST_ACK_PREFIX}.>")


def permissions(user: str) -> Permissions:
    """The allow/deny lists the server enforces for `user` (a service, 'operator' or 'admin')."""
    if user == ADMIN:
        return Permissions(publish=(">",), subscribe=(">",), allow_responses=False)
    try:
        role = ROLES[user]
    except KeyError:
        raise KeyError(f"unknown NATS user {user!r}; known: {', '.join(USERS)}") from None
    service = user != OPERATOR_NAME
    reads = (*role.reads, "OPS") if service and "OPS" not in role.reads else role.reads
    pub: list[str] = [*role.publish, *_COMMON_PUB, *(_SERVICE_PUB if service else ("$SRV.>",))]
    sub: list[str] = [*role.serves, *role.queues, *_COMMON_SUB]
    for stream in reads:
        pub += stream_read_api(stream)
    for stream in role.gets:
        pub += (f"{_JS}.STREAM.INFO.{stream}", f"{_JS}.STREAM.MSG.GET.{stream}")
    pub_deny = [api for owner, stream, durable in owned_durables() if owner != user and stream in reads
                for api in durable_api(stream, durable)]
    for bucket in dict.fromkeys((*role.kv_read, TRUST_BUCKET)):  # everyone reads the trusted keys
        pub += stream_read_api(kv_stream(bucket))
        sub.append(f"$KV.{bucket}.>")
    for key in role.kv_write:
        bucket, _, keys = key.partition(".")
        pub.append(f"$KV.{bucket}.{keys or '>'}")
    for store in role.obj_read:
        pub += stream_read_api(obj_stream(store))
    for store in role.obj_write:
        pub.append(f"$O.{store}.>")  # content-addressed: a put never replaces, so no purge
    if service:
        sub += (HEARTBEAT_PING, f"health.{user}", "$SRV.*", f"$SRV.*.{user}", f"$SRV.*.{user}.>")
    if role.subscribe_all:
        # Reads every subject, but never joins what services serve: it cannot answer tool, analysis,
        # profile, health or discovery requests, so no client trusts a forged reply from it.
        served = sorted({s for r in ROLES.values() for s in (*r.serves, *(q.split()[0] for q in r.queues))})
        return Permissions(publish=tuple(dict.fromkeys(pub)), subscribe=(">",), publish_deny=tuple(pub_deny),
                           subscribe_deny=(*served, "health.>", "$SRV.>"))
    return Permissions(publish=tuple(dict.fromkeys(pub)), subscribe=tuple(dict.fromkeys(sub)),
                       publish_deny=tuple(pub_deny), allow_responses=True)


def owned_durables() -> list[tuple[str, str, str]]:
    """(owner, stream, durable) for every durable consumer a service owns."""
    out = [(name, "OPS", f"{name}-heartbeat") for name in SERVICE_NAMES]
    for name, role in ROLES.items():
        out += [(name, *d.split(":", 1)) for d in role.durables]  # type: ignore[misc]
    return out


def durable_api(stream: str, durable: str) -> tuple[str, ...]:
    """What only a durable's owner (and admin) may do with it: create or redefine, fetch, ack."""
    return (f"{_JS}.CONSUMER.CREATE.{stream}.{durable}", f"{_JS}.CONSUMER.CREATE.{stream}.{durable}.>",
            f"{_JS}.CONSUMER.DURABLE.CREATE.{stream}.{durable}", f"{_JS}.CONSUMER.MSG.NEXT.{stream}.{durable}",
            f"$JS.ACK.{stream}.{durable}.>")
