"""The one table of subjects, JetStream streams, KV buckets, object stores and per-service permissions.

Provisioning (`shared.provision`) and the nats-server config (`shared.natsconf`) are both generated from
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
    # 256 MiB per stream keeps all ten under the server's 8 GB file-store cap with room to spare.
    max_bytes: int = 256 << 20


STREAMS: tuple[Stream, ...] = (
    Stream(name="OPS", subjects=("ops.>",), description="heartbeats and operator notices",
           max_age_s=3600, max_bytes=64 << 20),
    # One state vector per GPU per period; an hour is enough for replay and the 5-minute trend.
    Stream(name="TELEMETRY", subjects=("telemetry.>",), description="state vectors and launch telemetry",
           max_age_s=3600, max_bytes=512 << 20),
    Stream(name="EVENTS", subjects=("events.>",), description="state-change events"),
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


class Bucket(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str
    history: int = 5


KV_BUCKETS: tuple[Bucket, ...] = (
    Bucket(name="kernels", description="kernel registry: name -> task and current version"),
    Bucket(name="jobs", description="job state, one key per job"),
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


class Permissions(msgspec.Struct, frozen=True, kw_only=True):
    publish: tuple[str, ...]
    subscribe: tuple[str, ...]


# Every client needs these: JetStream API and acks, replies to inboxes, micro-service discovery,
# KV and object-store access, and dead letters (any consumer may dead-letter what it cannot decode).
_COMMON_PUB = ("$JS.API.>", "$JS.ACK.>", "$JS.FC.>", "_INBOX.>", "$SRV.>", "$KV.>", "$O.>", "dlq.>",
               "ops.heartbeat.ack.>")
_COMMON_SUB = ("_INBOX.>", "$SRV.>", "$KV.>", "$O.>", "ops.heartbeat.ping")

SERVICE_NAMES: tuple[str, ...] = ("telemetry", "decomposer", "planner", "toolrunner", "verifier", "critic")

_SERVICE_SUBJECTS: dict[str, Permissions] = {
    "telemetry": Permissions(publish=("telemetry.>", "events.state.>", "tools.>"),
                             subscribe=("telemetry.>", KERNEL_PROFILE)),
    "decomposer": Permissions(publish=("tools.>", "audit.decomposer"), subscribe=("decomposer.analyze",)),
    # The planner runs what an LLM proposes: it may publish candidates, never verdicts or patches.
    "planner": Permissions(publish=("jobs.>", "candidates.>", "tools.>", "decomposer.analyze"),
                           subscribe=("events.state.>", "optimize.request", OPTIMIZE_CANCEL, "jobs.>", "verdicts.>",
                                      "patches.>", "failures.>")),
    "toolrunner": Permissions(publish=("audit.toolrunner",), subscribe=("tools.>", "toolrunner.>")),
    "verifier": Permissions(publish=("verdicts.>", "tools.>"), subscribe=("candidates.>",)),
    # The critic also reads optimize requests: they are the root of a chain that no telemetry started.
    "critic": Permissions(publish=("patches.>", "failures.>"),
                          subscribe=("verdicts.>", "candidates.>", "events.state.>", "jobs.>",
                                     "optimize.request")),
}

# The operator (kpilot CLI and any client that connects without credentials) reads everything and
# may ask for work, but publishes no verdicts, candidates or patches.
OPERATOR = Permissions(
    publish=("optimize.request", OPTIMIZE_CANCEL, "tools.>", "decomposer.analyze", KERNEL_PROFILE, "telemetry.>", "ops.>",
             "health.>",
             "toolrunner.>", "$JS.API.>",
             "$JS.ACK.>", "$JS.FC.>", "_INBOX.>", "$SRV.>", "$KV.>", "$O.>"),
    subscribe=(">",),
)


def permissions(service: str) -> Permissions:
    """The publish/subscribe allow-lists the server enforces for `service` (or 'operator')."""
    if service == "operator":
        return OPERATOR
    try:
        own = _SERVICE_SUBJECTS[service]
    except KeyError:
        raise KeyError(f"unknown service {service!r}; known: {', '.join(SERVICE_NAMES)}") from None
    return Permissions(publish=own.publish + _COMMON_PUB,
                       subscribe=own.subscribe + _COMMON_SUB + (f"health.{service}",))
