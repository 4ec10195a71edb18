"""Every message that crosses the bus, as msgspec Structs sharing one envelope.

The wire format is JSON (any NATS client in any language can read it). Each message carries the
envelope fields `id` (a ULID, also the JetStream `Nats-Msg-Id`), `ts`, `source`, `kind` (the tag that
selects the type), `schema_version`, `job_id` and `causation_id`, so a verified patch can be walked back
to the telemetry sample that started it.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import msgspec

from shared import limits
from shared.ids import new_id, now

SCHEMA_VERSION = 1

Scalar = int | float | str | bool
"""A kernel configuration value: constexpr, num_warps, num_stages, maxnreg, ..."""


class Message(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, tag_field="kind"):
    """The envelope. Subclasses add the payload; `kind` is filled in from the subclass tag."""

    source: str
    id: str = msgspec.field(default_factory=new_id)
    ts: float = msgspec.field(default_factory=now)
    schema_version: int = SCHEMA_VERSION
    job_id: str | None = None
    causation_id: str | None = None

    def caused(self, **fields: Any) -> dict[str, Any]:
        """Envelope fields for a message caused by this one: same job, causation = this id."""
        return {"job_id": self.job_id, "causation_id": self.id, **fields}


# ---------------------------------------------------------------- operations


class Heartbeat(Message, tag="heartbeat"):
    """Published on `ops.heartbeat.ping`; every service answers with a HeartbeatAck."""

    seq: int = 0


class HeartbeatAck(Message, tag="heartbeat_ack"):
    """One service's answer to a Heartbeat (`causation_id` = the ping's id)."""

    service: str
    instance: str
    version: str


# ---------------------------------------------------------------- telemetry

Resource = Literal[
    "sm_active", "l2_bandwidth", "tc_occupancy", "gmem_coalescing", "warp_divergence", "reg_pressure",
    "shared_mem_util", "tensor_core_util", "pcie_bw", "nvlink_bw", "l1_cache_hit", "inst_issue_stall",
    "dram_bandwidth", "sm_clock", "power", "memory_used", "occupancy", "gpu_util", "l2_hit_rate",
]
TimeAxis = Literal["current", "delta_15s", "delta_1m", "trend_5m", "anomaly_score"]


class StateTriple(msgspec.Struct, forbid_unknown_fields=True):
    """One coordinate of GPU state: (resource, time, space) with its value, unit and source."""

    resource: Resource
    time: TimeAxis
    space: str  # "global_avg", "sm_group:0-15", "warp_group:3", ...
    value: float
    unit: str
    source: str  # "nvml", "nvml_gpm:5", "dcgm:1004", "ncu:<metric>", "static:ptxas"


class AbsentDimension(msgspec.Struct, forbid_unknown_fields=True):
    """A dimension no source provides: absent with the reason, never zero."""

    resource: Resource
    reason: str


class KernelShare(msgspec.Struct, forbid_unknown_fields=True):
    """A kernel's share of GPU time over a window, from launch telemetry."""

    kernel: str
    share: float
    launches: int
    mean_us: float | None = None
    # The launch config (constexprs, num_warps, ...) that took most of the kernel's time: which version of
    # the kernel the figures describe ({} = not known). A rollback blames a patch only for its own version.
    config: dict[str, Scalar] = {}


class StateVector(Message, tag="state_vector"):
    node: str
    gpu: str
    period_s: float
    triples: list[StateTriple] = []
    absent: list[AbsentDimension] = []
    kernels: list[KernelShare] = []
    gpu_name: str = ""


StateEventKind = Literal[
    "tc_underutilization", "bandwidth_low", "l2_miss_spike", "occupancy_drop", "throttling", "anomaly",
    "regression",
]


class StateChangeEvent(Message, tag="state_change"):
    """Edge-triggered: one `start` when a detector's condition begins, one `clear` when it ends."""

    event: StateEventKind
    edge: Literal["start", "clear"]
    node: str
    gpu: str
    detector: str
    triples: list[StateTriple] = []
    hot_kernels: list[KernelShare] = []
    detail: str = ""  # one line: value, threshold and how long it held ("... start: value 12 < 30 for 30s")


class SampleMetric(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """One device reading in a unit normalised by the sampler (pct, pct_of_peak, GB/s, MHz, W, MiB)."""

    resource: Resource
    value: float
    unit: str
    source: str  # "nvml_gpm:5", "dcgm:1004", ...
    space: str = "global_avg"


class DeviceSample(Message, tag="device_sample"):
    """Raw readings of one GPU at one instant, on `telemetry.samples.<node>.<gpu>`: from the telemetry
    service's own sampler or from `kpilot replay`. The telemetry service turns them into StateVectors."""

    node: str
    gpu: str
    sampled_at: float  # when the readings were taken (envelope `ts` is when the message was made)
    gpu_name: str = ""
    window_s: float = 0.0  # the span the counters average over
    period_s: float = 0.0  # the producer's sampling period; 0 = unknown (the service uses its own)
    metrics: list[SampleMetric] = []
    clock_event_reasons: list[str] | None = None  # None: the sampler could not read them
    absent: list[AbsentDimension] = []
    origin: str = ""  # "nvml", "dcgm:<url>", "replay:<trace file>"


class LaunchStat(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Launches of one kernel with one grid and config between two drains of the launch SDK."""

    kernel: str
    launches: int
    t_first: float
    t_last: float
    gpu: str = ""  # the GPU's UUID when the workload knows it; "" = every GPU of the node
    grid: list[int] = []
    config: dict[str, Scalar] = {}
    durations_us: list[float] = []  # sampled launches only (CUDA events), never estimated


class LaunchBatch(Message, tag="launch_batch"):
    """What one workload process launched since its last batch, on `telemetry.launches.<node>`."""

    node: str
    pid: int = 0
    records: list[LaunchStat] = []
    dropped: int = 0  # timed launches the SDK gave up on since the last batch


# ---------------------------------------------------------------- live capture (bring your own kernel)
#
# telemetry sees a hot kernel with no registered task -> CaptureRequest on `capture.request.<node>`; the
# workload SDK on that node captures the kernel's next launch in-process and answers CapturedTaskSource on
# `capture.task.<kernel>`; telemetry stores it content-addressed, has the toolrunner's sandboxed loader
# check it, registers it and announces CaptureRegistered on `capture.registered.<kernel>`, on which the
# planner opens the job. A refusal at any step is a CaptureRegistered with `error` naming the fix.


class CaptureRequest(Message, tag="capture_request"):
    """Asks the workload SDK on `node` for a task of `kernel`; `event_id` is the state event that made it
    hot (the job's trigger, so the chain walks back to the telemetry sample)."""

    kernel: str
    node: str
    gpu: str = ""
    event_id: str = ""
    event: str = ""  # the StateEventKind
    share: float = 0.0  # of timed launch time, when the event was raised
    triples: list[StateTriple] = []


class CapturedTaskSource(Message, tag="captured_task"):
    """A task file captured in the workload process: its source text and sha256 (telemetry stores it under
    that name), or `error` saying why none was captured and what to do instead."""

    kernel: str
    node: str
    request_id: str
    event_id: str = ""
    triples: list[StateTriple] = []
    sha256: str = ""
    source_text: str = ""
    origin: str = ""  # file:line of the @triton.jit def
    calls: int = 0  # launches recorded while capturing
    pid: int = 0
    error: str = ""


class CaptureRegistered(Message, tag="capture_registered"):
    """A captured task that the sandboxed loader accepted and telemetry registered (`kernels` KV), or the
    reason it was refused (`error`, `task_path` empty)."""

    kernel: str
    node: str
    event_id: str = ""
    triples: list[StateTriple] = []
    task_path: str = ""
    sha256: str = ""
    error: str = ""


# ---------------------------------------------------------------- jobs and candidates

Policy = Literal["rules", "llm"]


class OptimizeRequest(Message, tag="optimize_request"):
    task_path: str
    kernel: str = ""
    budget_s: float = 300.0  # wall-clock budget of the job
    policy: Policy = "rules"
    gpu_budget_s: float = 600.0  # GPU seconds the verifier may spend (sum of Verdict.gpu_seconds)
    max_candidates: int = 48  # the replayed H200 search reaches 650+ TFLOP/s within ~20 candidates


JobStatus = Literal["open", "planning", "verifying", "converged", "budget_exhausted", "roofline", "failed",
                    "done", "cancelled"]
# A job in one of these has ended for good: its queued candidates are withdrawn from the verifier.
JOB_ENDED: tuple[JobStatus, ...] = ("converged", "budget_exhausted", "roofline", "failed", "done", "cancelled")


class LlmUsage(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """What the LLM calls of one plan (on a Candidate) or of a whole job (on a JobUpdate) cost, and who
    answered. Token counts are the server's own (None when it reported none), never estimated."""

    model: str = ""  # the name the server answered with
    model_sha256: str = ""  # the weights file's sha256 when known (a local server), else ""
    dialect: str = ""  # "openai" | "ollama"
    constraint: str = ""  # the answer format the server accepted: "json_schema", "grammar", "none", ...
    calls: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    seconds: float = 0.0  # wall time of the calls
    fallback: str = ""  # why the plan fell back to rules ("" = it did not)


class JobUpdate(Message, tag="job_update"):
    kernel: str
    status: JobStatus
    iteration: int = 0
    best_candidate_id: str | None = None
    note: str = ""
    task_path: str = ""
    best_score: float | None = None  # the objective of the best candidate (see `score_name`)
    score_name: str = ""  # e.g. "tflops" or "speedup"; empty while nothing was measured
    candidates: int = 0  # candidates published so far
    reasons: list[str] = []  # why the job stopped, or what failed
    llm: LlmUsage | None = None  # the job's LLM calls so far (None: no llm plan was asked for)


class CancelRequest(Message, tag="cancel_request"):
    """`kpilot cancel JOB` on `optimize.cancel`: the planner, which owns jobs, ends the job (`job_id`)."""

    reason: str = "cancelled by the operator"


ChangeKind = Literal["set_constexpr", "set_num_warps", "set_num_stages", "set_maxnreg", "set_grid",
                     "add_hint", "source_edit", "transform"]


class ChangeDescription(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """What to change, never code: the patcher applies it deterministically."""

    change: ChangeKind
    target: str = ""  # constexpr or kernel name, or the anchor line reference of a source edit
    value: Scalar | None = None
    search: str = ""
    replace: str = ""
    rationale: str = ""
    # add_hint only: "multiple_of" / "max_contiguous" (search = the variable, value = the argument) or
    # "eviction_policy" (value = "evict_first" | "evict_last" | "evict_normal"), at the `target` line.
    hint: Literal["", "multiple_of", "max_contiguous", "eviction_policy"] = ""
    # transform only: a row of the transformation table (`kpilot transforms`; shared/transforms/table.py)
    # and its parameters (each within its domain; a missing one takes its default). `target` = the
    # kernel to rewrite ("" = the task's primary kernel).
    transform: str = ""
    params: dict[str, Scalar] = {}

    def text(self) -> str:
        """One line for people (evidence chains, reports): `transform split_k(SPLIT=4)`, `set_constexpr
        BLOCK_M=64`, `set_num_warps 8`, `source_edit at task.py:27`."""
        if self.change == "transform":
            params = ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
            return f"transform {self.transform}" + (f"({params})" if params else "")
        if self.change == "source_edit":
            return f"source_edit at {self.target or '?'}"
        if self.value is None:
            return f"{self.change} {self.target}".strip()
        return f"{self.change} {self.target}={self.value}" if self.target else f"{self.change} {self.value}"

    def patterns(self) -> list[str]:
        """The decomposer pattern ids the rationale names, in order (`_PATTERN`, `_SEARCH`)."""
        if m := _SEARCH.match(self.rationale):
            return [p.group(1) for part in m.group(1).split("; ") if (p := _PATTERN.match(part))]
        return [m.group(1)] if (m := _PATTERN.match(self.rationale)) else []


# The planner's rules policy starts a rationale with the decomposer finding it answers:
# "uncoalesced_store @ add.py:12, sass:0x0450" or "small_grid: ..." (services/planner/policies/rules.py);
# a config-search change names the findings a config can fix after "for", "; "-separated:
# "config search (seed) for wgmma_not_used @ task.py:44, sass:0x0dd0; k_loop_not_pipelined @ task.py:107".
_PATTERN = re.compile(r"^([a-z][a-z0-9_]+)(?: @ |: )")
_SEARCH = re.compile(r"^config search \([^)]*\) for (.+)$")


class Candidate(Message, tag="candidate"):
    kernel: str
    task_path: str  # the task as the user gave it: reference and baseline
    version: int
    parent_id: str | None = None
    config: dict[str, Scalar] = {}  # the candidate file's CONFIG (already written into it)
    changes: list[ChangeDescription] = []
    diff: str = ""  # unified diff task -> candidate file
    source_sha256: str = ""  # sha256 of the candidate file's bytes
    # The immutable, self-contained candidate task file (<state>/candidates/<sha256>/task.py).
    candidate_path: str = ""
    llm: LlmUsage | None = None  # the LLM calls of the plan that proposed it (None: no LLM was asked)


# ---------------------------------------------------------------- verification

Layer = Literal["static", "micro", "full"]
# "withdrawn": the candidate's job ended (budget, convergence, cancel) before the funnel finished it; not a
# rejection, so no patch and no failure record follow.
VerdictStatus = Literal["pass", "fail", "skipped", "withdrawn"]


class Provenance(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Where a figure came from (GPU.md, "Timing method")."""

    device: str = "none"
    driver: str = ""
    cuda: str = ""
    triton: str = ""
    torch: str = ""
    method: str = ""


class Measurement(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A measured value, or `value=None` with `not_measured` saying why (e.g. "no GPU")."""

    name: str
    value: float | None = None
    unit: str = ""
    not_measured: str | None = None
    low: float | None = None  # interval or p20
    high: float | None = None  # interval or p80


class Verdict(Message, tag="verdict"):
    candidate_id: str
    kernel: str
    layer: Layer
    status: VerdictStatus
    reasons: list[str] = []
    measurements: list[Measurement] = []
    provenance: Provenance = msgspec.field(default_factory=Provenance)
    gpu_seconds: float = 0.0
    # A hazard the static layer could not prove safe: rejected, and `annotations` holds the SASS lines.
    needs_review: bool = False
    annotations: list[str] = []
    wall_s: float = 0.0  # wall time of this layer, all tool calls included
    candidate_path: str = ""  # the file verified ("" = the task itself under `config`)
    config: dict[str, Scalar] = {}


class EvidenceLink(msgspec.Struct, forbid_unknown_fields=True):
    """One step of the chain: trigger -> state -> diagnosis -> change -> verdicts."""

    step: str
    message_id: str
    summary: str


class VerifiedPatch(Message, tag="verified_patch"):
    kernel: str
    candidate_id: str
    diff: str
    config: dict[str, Scalar] = {}
    speedup: Measurement | None = None
    evidence_chain: list[EvidenceLink] = []
    report_md: str = ""
    # A self-contained page (inline SVG plots, no external assets) of the same report.
    report_html: str = ""
    version: int = 0  # the candidate's version number
    # "ed25519:<key id>:<base64>" by the critic over every other field (shared/signing.py); a subscriber
    # applies only a patch whose signature checks against the trusted critic key.
    signature: str = ""


class ProposedPatch(Message, tag="proposed_patch"):
    """A candidate the funnel found correct whose speedup was not measured on the target device.

    Published on `patches.proposed.<kernel>`, never on `patches.verified.*`: nothing may apply it as a
    verified change. `not_verified` says why (e.g. "speedup not measured: no GPU"); timing it on the GPU
    (`kpilot verify` or a job there) is what would verify it.
    """

    kernel: str
    candidate_id: str
    diff: str
    not_verified: str
    config: dict[str, Scalar] = {}
    speedup: Measurement | None = None
    evidence_chain: list[EvidenceLink] = []
    report_md: str = ""
    report_html: str = ""
    version: int = 0


class RejectedPatch(Message, tag="rejected_patch"):
    kernel: str
    candidate_id: str
    reasons: list[str]


class Rollback(Message, tag="rollback"):
    kernel: str
    from_candidate_id: str
    to_candidate_id: str | None
    reason: str


class FailureRecord(Message, tag="failure_record"):
    candidate_id: str
    kernel: str
    layer: Layer
    reason: str
    pattern_ids: list[str] = []
    edit_kinds: list[str] = []
    features: dict[str, float] = {}


# ---------------------------------------------------------------- tools, audit, dead letters


class ToolRequest(Message, tag="tool_request"):
    """`args` is a JSON object checked against the tool's input JSON Schema before anything runs."""

    tool: str
    args: dict[str, Any] = {}


class ToolError(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    code: Literal["invalid_request", "unknown_tool", "unavailable", "refused", "failed", "timeout",
                  "crashed", "out_of_memory", "internal"]
    message: str
    violations: list[str] = []


class ToolResult(Message, tag="tool_result"):
    tool: str
    tool_version: str
    ok: bool
    result: dict[str, Any] | None = None
    error: ToolError | None = None
    duration_s: float = 0.0
    cached: bool = False
    runner: str = ""


class AuditRecord(Message, tag="audit"):
    actor: str
    action: str
    args_sha256: str
    duration_s: float
    outcome: str


class DeadLetter(Message, tag="dead_letter"):
    """A message that could not be decoded, validated or handled: kept with the reason."""

    original_subject: str
    payload: str  # the original bytes, decoded as UTF-8 with replacement
    reason: str
    headers: dict[str, str] = {}
    deliveries: int = 1
    stream_seq: int | None = None


ANY_MESSAGE = (
    Heartbeat | HeartbeatAck | StateVector | StateChangeEvent | OptimizeRequest | CancelRequest | JobUpdate | Candidate
    | Verdict | VerifiedPatch | ProposedPatch | RejectedPatch | Rollback | FailureRecord | ToolRequest | ToolResult
    | AuditRecord | DeadLetter | DeviceSample | LaunchBatch | CaptureRequest | CapturedTaskSource
    | CaptureRegistered
)
"""Union of every message type: decode with `decode(data)` when the kind is not known in advance."""

MESSAGE_TYPES: tuple[type[Message], ...] = ANY_MESSAGE.__args__  # type: ignore[attr-defined]

_encoder = msgspec.json.Encoder()
_any_decoder = msgspec.json.Decoder(ANY_MESSAGE)
# one per message type, made on first use: its decoder, and the depth scan its bytes need (None: none)
_decoders: dict[type, tuple[msgspec.json.Decoder, int | None]] = {}


def encode(msg: Message) -> bytes:
    return _encoder.encode(msg)


def decode(data: bytes, type_: type[Message] | None = None, *, max_bytes: int | None = None) -> Message:
    """Decode JSON bytes into the given message type, or into whichever type its `kind` names.

    Raises msgspec.DecodeError / msgspec.ValidationError on malformed input, including a message over
    `max_bytes` or nested deeper than shared/limits.py allows (checked first, without recursion);
    consumers turn those into dead letters.
    """
    if type_ is None:
        limits.check(data, max_bytes=max_bytes)
        return _any_decoder.decode(data)
    found = _decoders.get(type_)
    if found is None:  # a type whose decoder bounds the nesting needs no depth scan of the bytes
        bounded = limits.bounded_depth(type_)
        found = _decoders[type_] = (msgspec.json.Decoder(type_),
                                    None if bounded is not None and bounded <= limits.MAX_DEPTH else limits.MAX_DEPTH)
    limits.check(data, max_bytes=max_bytes, max_depth=found[1])
    return found[0].decode(data)
