"""Prometheus metrics of a kernelpilot process: their definitions, what the bus feeds them, and the HTTP
endpoint that serves them (`/metrics`, loopback by default).

The bus moves a `ConsumerMetrics` (its label children, resolved once) for every message a durable consumer
takes (received, handled, retried, duplicate, dead-lettered, handler latency; the bus lag once per fetched
batch, for its oldest message; `on_consumed` /
`on_handled` are the same by name), and calls `on_published` for every
message a service stores (the domain counters are derived from the messages themselves: a JobUpdate moves
`kpilot_jobs`, a Verdict counts a candidate at its layer and its GPU seconds, an AuditRecord is a tool call
served, a patch decision counts by outcome, a StateVector sets the GPU state gauges). The planner's LLM
adapters call `on_llm_tokens`. Every sample carries the `service` label of the bus that produced it.

Names follow Prometheus conventions (`_total` counters, `_seconds` histograms); GPU hardware metrics stay
dcgm-exporter's own (`DCGM_FI_*`, scraped from dcgm-exporter directly, see deploy/prometheus.yml).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily

from shared.messages import (
    AuditRecord,
    Candidate,
    JobUpdate,
    Message,
    ProposedPatch,
    RejectedPatch,
    Rollback,
    StateChangeEvent,
    StateVector,
    Verdict,
    VerifiedPatch,
)

REGISTRY = CollectorRegistry(auto_describe=True)

# Handler latency spans a 1 ms KV write to a 15-minute GPU layer.
_HANDLER_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900)
_LAG_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30)
_TOOL_BUCKETS = (0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900)

MESSAGES = Counter("kpilot_messages_total", "Messages a durable consumer took, by what became of them",
                   ["service", "consumer", "outcome"], registry=REGISTRY)
HANDLER_SECONDS = Histogram("kpilot_handler_seconds", "Wall time of a consumer's handler per message",
                            ["service", "consumer"], buckets=_HANDLER_BUCKETS, registry=REGISTRY)
BUS_LAG = Histogram("kpilot_bus_lag_seconds",
                    "Age of the oldest message of each batch a consumer fetched, once handled (now - envelope ts)",
                    ["service", "consumer"], buckets=_LAG_BUCKETS, registry=REGISTRY)
PUBLISHED = Counter("kpilot_published_total", "Messages stored on JetStream, by message kind",
                    ["service", "kind"], registry=REGISTRY)
JOBS = Gauge("kpilot_jobs", "Jobs this process last saw in each state", ["service", "state"], registry=REGISTRY)
JOB_UPDATES = Counter("kpilot_job_updates_total", "Job status updates published, by the new state",
                      ["service", "state"], registry=REGISTRY)
CANDIDATES_PROPOSED = Counter("kpilot_candidates_proposed_total", "Candidates published by the planner",
                              ["service"], registry=REGISTRY)
CANDIDATES = Counter("kpilot_candidates_total", "Candidates that reached a verifier layer, by its outcome",
                     ["service", "layer", "outcome"], registry=REGISTRY)
GPU_SECONDS = Counter("kpilot_gpu_seconds_total", "GPU seconds the verifier spent, per funnel layer",
                      ["service", "layer"], registry=REGISTRY)
LAYER_SECONDS = Histogram("kpilot_layer_seconds", "Wall time of one verifier layer for one candidate",
                          ["service", "layer"], buckets=_HANDLER_BUCKETS, registry=REGISTRY)
PATCHES = Counter("kpilot_patches_total", "Patch decisions by the critic", ["service", "outcome"],
                  registry=REGISTRY)
STATE_EVENTS = Counter("kpilot_state_events_total", "Edge-triggered telemetry state events",
                       ["service", "event", "edge"], registry=REGISTRY)
TOOL_CALLS = Counter("kpilot_tool_calls_total", "Tool calls served, by tool and outcome",
                     ["service", "tool", "outcome"], registry=REGISTRY)
TOOL_SECONDS = Histogram("kpilot_tool_call_seconds", "Duration of a served tool call",
                         ["service", "tool"], buckets=_TOOL_BUCKETS, registry=REGISTRY)
LLM_TOKENS = Counter("kpilot_llm_tokens_total", "Tokens an LLM policy sent (prompt) and got (completion)",
                     ["model", "direction"], registry=REGISTRY)
REQUESTS = Counter("kpilot_requests_total", "Requests a service endpoint answered (tools, analyze, health)",
                   ["service", "endpoint"], registry=REGISTRY)
REQUEST_SECONDS = Histogram("kpilot_request_seconds", "Wall time of an endpoint's handler",
                            ["service", "endpoint"], buckets=_TOOL_BUCKETS, registry=REGISTRY)
INFO = Gauge("kpilot_service_info", "1 per running service instance", ["service", "instance", "version"],
             registry=REGISTRY)

ConsumeOutcome = Literal["received", "handled", "retried", "duplicate", "dead_lettered"]

_lock = threading.Lock()
# labels() validates and locks on every call (~5 us); the hooks run per message, so children are cached.
_children: dict[tuple[int, tuple[str, ...]], Any] = {}


def _child(metric: Any, *labels: str) -> Any:
    key = (id(metric), labels)
    child = _children.get(key)
    if child is None:
        child = _children[key] = metric.labels(*labels)
    return child
_kinds: dict[type, str] = {}  # message type -> its tag (__struct_config__ is built on each access)
_published: dict[tuple[str, type], Any] = {}  # (service, message type) -> its kpilot_published_total child
_latest_state: dict[tuple[str, str, str], StateVector] = {}
_job_states: OrderedDict[tuple[str, str], str] = OrderedDict()  # (service, job id) -> last state
_MAX_JOBS = 10_000


class ConsumerMetrics:
    """One durable consumer's label children, resolved once: the bus moves them per message."""

    __slots__ = ("dead_lettered", "duplicate", "handled", "handler_seconds", "lag_seconds", "received", "retried")

    def __init__(self, service: str, consumer: str) -> None:
        self.received, self.handled, self.retried, self.duplicate, self.dead_lettered = (
            _child(MESSAGES, service, consumer, outcome)
            for outcome in ("received", "handled", "retried", "duplicate", "dead_lettered"))
        self.handler_seconds = _child(HANDLER_SECONDS, service, consumer)
        self.lag_seconds = _child(BUS_LAG, service, consumer)


_consumers: dict[tuple[str, str], ConsumerMetrics] = {}


def consumer(service: str, consumer: str) -> ConsumerMetrics:
    """The metrics of `consumer` of `service` (the same object on every call)."""
    key = (service, consumer)
    found = _consumers.get(key)
    if found is None:
        found = _consumers[key] = ConsumerMetrics(service, consumer)
    return found


def on_consumed(service: str, consumer: str, outcome: ConsumeOutcome) -> None:
    _child(MESSAGES, service, consumer, outcome).inc()


def on_handled(service: str, consumer: str, handler_s: float, lag_s: float) -> None:
    _child(HANDLER_SECONDS, service, consumer).observe(handler_s)
    _child(BUS_LAG, service, consumer).observe(max(lag_s, 0.0))


def on_published(service: str, msg: Message) -> None:
    """Count one stored message and move the domain metric it stands for."""
    cls = type(msg)
    counter = _published.get((service, cls))
    if counter is None:  # first message of this kind from this service: resolve its tag and child once
        kind = _kinds.get(cls) or _kinds.setdefault(cls, str(cls.__struct_config__.tag))
        counter = _published[(service, cls)] = _child(PUBLISHED, service, kind)
    counter.inc()
    if cls is StateVector:  # the high-rate kind (telemetry) first; read at scrape time (GpuStateCollector)
        _latest_state[(service, msg.node, msg.gpu)] = msg  # type: ignore[attr-defined]
    elif isinstance(msg, JobUpdate):
        _job_state(service, msg.job_id or msg.id, msg.status)
        _child(JOB_UPDATES, service, msg.status).inc()
    elif isinstance(msg, Candidate):
        _child(CANDIDATES_PROPOSED, service).inc()
    elif isinstance(msg, Verdict):
        _child(CANDIDATES, service, msg.layer, msg.status).inc()
        _child(GPU_SECONDS, service, msg.layer).inc(msg.gpu_seconds)
        if msg.status != "skipped":
            _child(LAYER_SECONDS, service, msg.layer).observe(msg.wall_s)
    elif isinstance(msg, VerifiedPatch):
        _child(PATCHES, service, "verified").inc()
    elif isinstance(msg, ProposedPatch):  # correct, its speed not measured on the GPU
        _child(PATCHES, service, "proposed").inc()
    elif isinstance(msg, RejectedPatch):
        _child(PATCHES, service, "rejected").inc()
    elif isinstance(msg, Rollback):
        _child(PATCHES, service, "rollback").inc()
    elif isinstance(msg, AuditRecord) and msg.actor:
        outcome = "ok" if msg.outcome.startswith("ok") else msg.outcome
        _child(TOOL_CALLS, service, msg.action, outcome).inc()
        _child(TOOL_SECONDS, service, msg.action).observe(msg.duration_s)
    elif isinstance(msg, StateChangeEvent):
        _child(STATE_EVENTS, service, msg.event, msg.edge).inc()
    elif isinstance(msg, StateVector):  # read at scrape time (GpuStateCollector): no work per message
        _latest_state[(service, msg.node, msg.gpu)] = msg


R = TypeVar("R")


def timed_endpoint(service: str, endpoint: str,
                   handler: Callable[[R], Awaitable[None]]) -> Callable[[R], Awaitable[None]]:
    """`handler` counted and timed as one endpoint of `service` (the runtime wraps every endpoint)."""
    count, hist = REQUESTS.labels(service, endpoint), REQUEST_SECONDS.labels(service, endpoint)

    async def _timed(req: R) -> None:
        with hist.time():
            await handler(req)
        count.inc()

    return _timed


class GpuStateCollector:
    """`kpilot_gpu_state`: the current global values of the last StateVector published per GPU."""

    def describe(self) -> list[GaugeMetricFamily]:
        return [self._family()]

    def collect(self) -> list[GaugeMetricFamily]:
        fam = self._family()
        for (service, node, gpu), vec in list(_latest_state.items()):
            for t in vec.triples:
                if t.time == "current" and t.space == "global_avg":
                    fam.add_metric([service, node, gpu, t.resource, t.unit], t.value)
        return [fam]

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily("kpilot_gpu_state", "The telemetry state vector's current global values per GPU",
                                 labels=["service", "node", "gpu", "resource", "unit"])


REGISTRY.register(GpuStateCollector())


def on_llm_tokens(model: str, prompt: int | None, completion: int | None) -> None:
    """Token counts as the LLM server reported them (None: it reported none)."""
    if prompt:
        LLM_TOKENS.labels(model, "prompt").inc(prompt)
    if completion:
        LLM_TOKENS.labels(model, "completion").inc(completion)


def _job_state(service: str, job_id: str, state: str) -> None:
    with _lock:
        old = _job_states.pop((service, job_id), None)
        if old is not None:
            JOBS.labels(service, old).dec()
        _job_states[(service, job_id)] = state
        JOBS.labels(service, state).inc()
        if len(_job_states) > _MAX_JOBS:  # forget the oldest job (it stays counted in its last state)
            _job_states.popitem(last=False)


class Endpoint:
    """The process's /metrics server, started once and shared by every bus of the process."""

    _url: str | None = None

    @classmethod
    def start(cls, service: str, instance: str, version: str, *, host: str = "127.0.0.1",
              port: int = 0) -> str:
        """Serve REGISTRY on http://host:port/metrics (port 0: a free one) and return that URL."""
        INFO.labels(service, instance, version).set(1)
        with _lock:
            if cls._url is None:
                try:
                    server, _thread = start_http_server(port, addr=host, registry=REGISTRY)
                except OSError as e:
                    raise OSError(f"cannot serve metrics on {host}:{port}: {e}. Fix: pass --metrics-port "
                                  f"with a free port, or 0 for any free one.") from e
                bound = server.server_address[1]
                shown = f"[{host}]" if ":" in host else host
                cls._url = f"http://{shown}:{bound}/metrics"
            return cls._url
