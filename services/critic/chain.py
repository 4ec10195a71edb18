"""The evidence chain: messages indexed by id, walked by causation id from a verdict back to its trigger.

A verified patch must be explainable end to end (DESIGN.md, "One job, end to end"): the telemetry event
or optimize request that started the job, the state triples it carried, the diagnosis the change answers,
the change itself and the verdict of every funnel layer. `build_chain` collects those messages and
names every causation id that does not resolve, so the review can reject a chain with a hole in it.
"""

from __future__ import annotations

from collections import OrderedDict

import msgspec

from shared.messages import (
    Candidate,
    DeviceSample,
    EvidenceLink,
    JobUpdate,
    Measurement,
    Message,
    OptimizeRequest,
    StateChangeEvent,
    StateTriple,
    StateVector,
    Verdict,
)

LAYERS: tuple[str, ...] = ("static", "micro", "full")
# A causation walk longer than this is a cycle or a runaway planner; 256 covers ~80 iterations of
# job update -> candidate -> verdict.
MAX_DEPTH = 256
# Messages the critic remembers (all kinds together). A job of 50 iterations publishes ~200 messages,
# so 20,000 holds the last ~100 jobs in about 40 MB of Python objects.
DEFAULT_CAPACITY = 20_000

Trigger = StateChangeEvent | OptimizeRequest


def kind_of(msg: Message) -> str:
    """The message's `kind` tag (msgspec keeps the tag in the type, not on the instance)."""
    return str(type(msg).__struct_config__.tag)


class MessageIndex:
    """A bounded id -> message map, plus candidate id -> its verdicts (oldest evicted first)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._by_id: OrderedDict[str, Message] = OrderedDict()
        self._verdicts: dict[str, list[str]] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._by_id

    def get(self, message_id: str | None) -> Message | None:
        return self._by_id.get(message_id) if message_id else None

    def add(self, msg: Message) -> None:
        """Idempotent: a message seen again (replay, redelivery) keeps its first copy."""
        if msg.id in self._by_id:
            return
        self._by_id[msg.id] = msg
        if isinstance(msg, Verdict):
            self._verdicts.setdefault(msg.candidate_id, []).append(msg.id)
        while len(self._by_id) > self.capacity:
            _, old = self._by_id.popitem(last=False)
            if isinstance(old, Verdict):
                ids = self._verdicts.get(old.candidate_id, [])
                if old.id in ids:
                    ids.remove(old.id)
                if not ids:
                    self._verdicts.pop(old.candidate_id, None)

    def verdicts_for(self, candidate_id: str) -> list[Verdict]:
        out = [self._by_id[i] for i in self._verdicts.get(candidate_id, []) if i in self._by_id]
        return [v for v in out if isinstance(v, Verdict)]

    def candidates_of_job(self, job_id: str | None) -> list[Candidate]:
        if not job_id:
            return []
        return [m for m in self._by_id.values() if isinstance(m, Candidate) and m.job_id == job_id]


class Chain(msgspec.Struct, kw_only=True):
    """What the walk found: the trigger at the root, the candidate, its verdicts by layer, the path."""

    path: list[Message]  # root (trigger) first, the verdict that started the walk last
    trigger: Trigger | None
    candidate: Candidate | None
    verdicts: dict[str, Verdict]  # layer -> the latest verdict of that layer for the candidate
    unresolved: list[str]  # "<message kind> <id>: causation id <x> does not resolve"
    problems: list[str]  # cycles, a root that is no trigger, job ids that disagree
    links: list[EvidenceLink]


def build_chain(verdict: Verdict, index: MessageIndex) -> Chain:
    """Walk from `verdict` back to the root; add the candidate's other verdicts; make the links."""
    path: list[Message] = []
    unresolved: list[str] = []
    problems: list[str] = []
    seen: set[str] = set()
    broken = False  # the walk stopped at an id the index does not hold
    msg: Message | None = verdict
    while msg is not None:
        if msg.id in seen or len(path) >= MAX_DEPTH:
            problems.append(f"causation walk from verdict {verdict.id} loops or exceeds {MAX_DEPTH} steps "
                            f"at {kind_of(msg)} {msg.id}")
            break
        seen.add(msg.id)
        path.append(msg)
        if msg.causation_id is None:
            break
        nxt = index.get(msg.causation_id)
        if nxt is None:
            broken = True
            unresolved.append(f"{kind_of(msg)} {msg.id}: causation id {msg.causation_id} does not resolve")
        msg = nxt
    path.reverse()

    candidate = index.get(verdict.candidate_id)
    if not isinstance(candidate, Candidate):
        unresolved.append(f"verdict {verdict.id}: candidate id {verdict.candidate_id} does not resolve")
        candidate = None
    elif candidate.id not in seen:
        problems.append(f"verdict {verdict.id} names candidate {candidate.id} but its causation chain "
                        "does not pass through that candidate")

    verdicts: dict[str, Verdict] = {}
    for v in sorted(index.verdicts_for(verdict.candidate_id) + [verdict], key=lambda v: (v.ts, v.id)):
        verdicts[v.layer] = v
    for v in verdicts.values():
        if v.id != verdict.id and v.causation_id is not None and v.causation_id not in index:
            unresolved.append(f"verdict {v.id}: causation id {v.causation_id} does not resolve")

    root = path[0]
    # The trigger is the first state-change event or optimize request; telemetry before it (the state
    # vector and the device sample that caused the event) is part of the chain, not its trigger.
    trigger = next((m for m in path if isinstance(m, (StateChangeEvent, OptimizeRequest))), None)
    if trigger is not None and any(not isinstance(m, (StateVector, DeviceSample))
                                   for m in path[:path.index(trigger)]):
        problems.append(f"the chain starts at {kind_of(root)} {root.id}: only telemetry may precede the "
                        "trigger")
    if trigger is None and not broken:
        problems.append(f"the chain starts at {kind_of(root)} {root.id}, not at a state-change event or an "
                        "optimize request")
    jobs = {m.job_id for m in path if m.job_id} | {v.job_id for v in verdicts.values() if v.job_id}
    if len(jobs) > 1:
        problems.append(f"messages of one chain name different jobs: {', '.join(sorted(jobs))}")
    chain = Chain(path=path, trigger=trigger, candidate=candidate, verdicts=verdicts, unresolved=unresolved,
                  problems=problems, links=[])
    chain.links = evidence_links(chain)
    return chain


def evidence_links(chain: Chain) -> list[EvidenceLink]:
    """trigger -> state -> diagnosis -> (earlier iterations) -> change -> verdict per layer."""
    links: list[EvidenceLink] = []
    final = [v.id for v in chain.verdicts.values()]
    for msg in chain.path:
        if chain.candidate is not None and msg.id == chain.candidate.id:
            links.extend(_candidate_links(msg))  # type: ignore[arg-type]
        elif isinstance(msg, Verdict) and msg.id in final:
            continue  # the verdicts of this candidate go last, in layer order
        else:
            links.extend(_links_of(msg))
    for layer in LAYERS:
        if layer in chain.verdicts:
            links.append(_verdict_link(chain.verdicts[layer]))
    return links


def _links_of(msg: Message) -> list[EvidenceLink]:
    if isinstance(msg, DeviceSample):
        return [EvidenceLink("telemetry_sample", msg.id, f"device sample of {msg.node}/{msg.gpu} "
                             f"from {msg.source}")]
    if isinstance(msg, StateVector):
        return [EvidenceLink("state_vector", msg.id, "; ".join(triple_text(t) for t in msg.triples[:6]))]
    if isinstance(msg, StateChangeEvent):
        hot = ", ".join(f"{k.kernel} {k.share:.0%}" for k in msg.hot_kernels[:3]) or "none named"
        out = [EvidenceLink("trigger", msg.id, f"{msg.event} {msg.edge} on {msg.node}/{msg.gpu} "
                            f"({msg.detector}): {msg.detail or 'no detail'}; hot kernels: {hot}")]
        if msg.triples:
            out.append(EvidenceLink("state", msg.id, "; ".join(triple_text(t) for t in msg.triples[:6])))
        return out
    if isinstance(msg, OptimizeRequest):
        return [EvidenceLink("trigger", msg.id, f"optimize request for {msg.kernel or 'the primary kernel'} "
                             f"of {msg.task_path} (policy {msg.policy}, budget {msg.budget_s:g} s)")]
    if isinstance(msg, JobUpdate):
        note = f": {msg.note}" if msg.note else ""
        step = "diagnosis" if msg.note and msg.status == "planning" else "job"
        return [EvidenceLink(step, msg.id, f"job {msg.status}, iteration {msg.iteration}{note}")]
    if isinstance(msg, Candidate):
        return [EvidenceLink("earlier_change", msg.id, f"v{msg.version}: {change_text(msg)}")]
    if isinstance(msg, Verdict):
        return [EvidenceLink(f"earlier_verdict:{msg.layer}", msg.id, verdict_text(msg))]
    return [EvidenceLink(kind_of(msg), msg.id, f"{kind_of(msg)} from {msg.source}")]


def _candidate_links(c: Candidate) -> list[EvidenceLink]:
    reasons = list(dict.fromkeys(ch.rationale for ch in c.changes if ch.rationale))
    out = []
    if reasons:
        out.append(EvidenceLink("diagnosis", c.id, " | ".join(reasons)))
    if c.llm is not None:  # the plan that proposed it came from a model: which one, and what it cost
        u = c.llm
        out.append(EvidenceLink("plan", c.id, f"llm {u.model} (sha256 {u.model_sha256[:16] or 'not known'}, "
                                f"{u.dialect}, answer format {u.constraint or '-'}): {u.calls} calls, "
                                f"{u.prompt_tokens}+{u.completion_tokens} tokens, {u.seconds:.1f} s"
                                + (f"; fell back: {u.fallback[:120]}" if u.fallback else "")))
    out.append(EvidenceLink("change", c.id, f"v{c.version} of {c.kernel}: {change_text(c)}"))
    return out


def _verdict_link(v: Verdict) -> EvidenceLink:
    return EvidenceLink(f"verdict:{v.layer}", v.id, verdict_text(v))


def pattern_ids(c: Candidate) -> list[str]:
    """The decomposer pattern ids the candidate's rationales name, in order, once each."""
    return list(dict.fromkeys(p for ch in c.changes for p in ch.patterns()))


def triple_text(t: StateTriple) -> str:
    return f"{t.resource}[{t.time}, {t.space}] = {t.value:g} {t.unit} ({t.source})"


def change_text(c: Candidate) -> str:
    return ", ".join(ch.text() for ch in c.changes) or "no change descriptions"


def verdict_text(v: Verdict) -> str:
    ms = "; ".join(measurement_text(m) for m in v.measurements[:4])
    why = "; ".join(v.reasons[:3])
    return f"{v.status}" + (f": {why}" if why else "") + (f" [{ms}]" if ms else "")


def measurement_text(m: Measurement) -> str:
    if m.value is None:
        return f"{m.name} not measured: {m.not_measured or 'no reason given'}"
    ci = f" [{m.low:g}, {m.high:g}]" if m.low is not None and m.high is not None else ""
    return f"{m.name} {m.value:g}{m.unit and ' ' + m.unit}{ci}"
