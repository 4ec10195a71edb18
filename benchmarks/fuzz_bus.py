"""Fuzz the bus of a real stack: malformed messages on every consumed subject, bad tool calls on every tool.

    python benchmarks/fuzz_bus.py [--per-subject 64] [--tool-calls 200] [--out benchmarks/results/fuzz.json]

`kpilot up` (supervisor, nats-server, the six services) on a free port in a temporary state dir; each
message is published with the identity allowed to publish on its subject. Kinds: a document nested 3,000
levels deep, one nested 70 levels, a 1.5 MiB message (over the 1 MiB consumer limit), bad UTF-8, not JSON,
truncated JSON, empty, a JSON scalar, a field of the wrong type, an unknown field, an unknown `kind`, and a valid
message of another type. Expected dead letters: one per consuming durable for every malformed message, and
one per *typed* durable for a message of another type (an untyped indexer, the critic's jobs and request
consumers, takes any valid message). Tool calls: not JSON, too deep, bad UTF-8, arguments of the wrong
type, missing or unknown, paths that do not exist, are directories, are 5,000 characters long or hold a
NUL byte, a 2 MiB argument, and garbage to `decomposer.analyze` and `profile.kernel`; each must be answered.
Path attacks that read device files (`/dev/zero`) belong to the sandbox's tests (tests/security/).
Counts: crashes (supervisor restarts + unhealthy services at the end), dead letters (expected / stored),
answers (structured error records / micro errors / none).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, get_args

import nats.errors

from services.kpilot.observe import status
from services.kpilot.stack import down, read_state, up
from shared.bus import Bus
from shared.messages import (
    Candidate,
    CapturedTaskSource,
    CaptureRegistered,
    DeviceSample,
    Heartbeat,
    JobUpdate,
    LaunchBatch,
    Message,
    OptimizeRequest,
    StateChangeEvent,
    StateEventKind,
    ToolRequest,
    Verdict,
    encode,
)
from shared.natsserver import EmbeddedServer, free_port
from shared.subjects import SERVICE_NAMES

ROOT = Path(__file__).resolve().parents[1]
EVENT = get_args(StateEventKind)[0]


class Family:
    def __init__(self, subject: str, publisher: str, typed: list[str], untyped: list[str], good: Message,
                 other: Message) -> None:
        self.subject, self.publisher, self.typed, self.untyped = subject, publisher, typed, untyped
        self.good, self.other = good, other  # a valid message of the subject's type, and of another type


def families() -> list[Family]:
    cand = Candidate(source="planner", kernel="fuzz", task_path="/nonexistent.py", version=1)
    return [
        Family("ops.heartbeat.ping", "operator", [f"{s}-heartbeat" for s in SERVICE_NAMES], [],
               Heartbeat(source="fuzz"), cand),
        Family("telemetry.samples.fuzz.0", "operator", ["telemetry-samples-all"], [],
               DeviceSample(source="fuzz", node="fuzz", gpu="0", sampled_at=0.0), cand),
        Family("telemetry.launches.fuzz", "operator", ["telemetry-launches-all"], [],
               LaunchBatch(source="fuzz", node="fuzz"), cand),
        Family("optimize.request", "operator", ["planner-requests"], ["critic-requests"],
               OptimizeRequest(source="fuzz", task_path="/nonexistent.py"), Heartbeat(source="fuzz")),
        Family("events.state.fuzz.n.0", "telemetry", ["planner-events", "critic-events", "telemetry-capture-asks"],
               [],
               StateChangeEvent(source="fuzz", event=EVENT, edge="start", node="n", gpu="0", detector="fuzz"), cand),
        Family("capture.task.fuzz", "operator", ["telemetry-captures"], [],
               CapturedTaskSource(source="fuzz", kernel="fuzz", node="n", request_id="r"), cand),
        Family("capture.registered.fuzz", "telemetry", ["planner-captures"], [],
               CaptureRegistered(source="fuzz", kernel="fuzz", node="n", error="fuzz"), cand),
        Family("verdicts.static.fuzz", "verifier", ["planner-verdicts", "critic-verdicts"], [],
               Verdict(source="fuzz", candidate_id="x", kernel="fuzz", layer="static", status="fail"), cand),
        Family("candidates.fuzz", "planner", ["verifier", "critic-candidates"], [], cand, Heartbeat(source="f")),
        Family("jobs.fuzz", "planner", [], ["critic-jobs"], JobUpdate(source="fuzz", kernel="fuzz", status="open"),
               Heartbeat(source="fuzz")),
    ]


def malformed(f: Family, kind: str) -> bytes:
    good = encode(f.good)
    doc = json.loads(good)
    return {
        "deep_3000": b'{"kind":"heartbeat","source":' + b"[" * 3000 + b"]" * 3000 + b"}",
        "deep_70": b'{"source":' + b'{"a":' * 70 + b"1" + b"}" * 70 + b"}",
        "huge": good[:-1] + b',"pad":"' + b"x" * (3 << 19) + b'"}',
        "bad_utf8": good.replace(b'"fuzz"', b'"\xff\xfe\xfd"', 1) if b'"fuzz"' in good else b'{"k":"\xff"}',
        "not_json": b"<xml>not json</xml>",
        "truncated": good[: len(good) // 2],
        "empty": b"",
        "scalar": b"42",
        "wrong_field_type": json.dumps({**doc, "source": 7}).encode(),
        "unknown_field": json.dumps({**doc, "no_such_field": 1}).encode(),
        "unknown_kind": json.dumps({**doc, "kind": "no_such_kind"}).encode(),
        "other_type": encode(f.other),
    }[kind]


KINDS = ("deep_3000", "deep_70", "huge", "bad_utf8", "not_json", "truncated", "empty", "scalar",
         "wrong_field_type", "unknown_field", "unknown_kind", "other_type")


def bad_tool_calls(n: int, tools: list[str], rng: random.Random, tmp: Path) -> list[tuple[str, str, bytes]]:
    """(label, subject, payload) for n calls, cycling through the kinds over every served tool."""
    def req(tool: str, args: dict[str, Any]) -> bytes:
        return encode(ToolRequest(source="fuzz", tool=tool, args=args))

    kinds: list[tuple[str, Any]] = [
        ("not_json", lambda t: b"\x00\x01 not json"),
        ("deep", lambda t: b'{"kind":"tool_request","source":"f","tool":"x","args":' + b"[" * 3000 + b"]" * 3000 + b"}"),
        ("bad_utf8", lambda t: b'{"kind":"tool_request","source":"\xff","tool":"x"}'),
        ("wrong_type_args", lambda t: req(t, {"task_path": 12, "path": ["x"], "config": "BLOCK"})),
        ("missing_args", lambda t: req(t, {})),
        ("unknown_args", lambda t: req(t, {"no_such_arg": True, "task_path": str(tmp / "none.py")})),
        ("nonexistent_path", lambda t: req(t, {"task_path": str(tmp / "nope.py"), "path": str(tmp / "nope.py")})),
        ("directory_path", lambda t: req(t, {"task_path": str(tmp), "path": str(tmp)})),
        ("overlong_path", lambda t: req(t, {"task_path": "/" + "a" * 5000 + ".py", "path": "/" + "a" * 5000 + ".py"})),
        ("nul_in_path", lambda t: req(t, {"task_path": str(tmp / "a\x00b.py"), "path": str(tmp / "a\x00b.py")})),
        ("huge_arg", lambda t: req(t, {"task_path": "x" * (2 << 20)})),
        ("wrong_message_type", lambda t: encode(Heartbeat(source="fuzz"))),
    ]
    calls = []
    for i in range(n):
        label, make = kinds[i % len(kinds)]
        if i % 10 == 9:  # every tenth goes to the other request endpoints
            subject = rng.choice(["decomposer.analyze", "profile.kernel"])
            calls.append((f"{subject}:{label}", subject, make("decompose")))
            continue
        tool = tools[(i // len(kinds)) % len(tools)]
        calls.append((f"tool:{label}", f"tools.{tool}", make(tool)))
    return calls


def commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=False).stdout.strip()


async def dlq_count(bus: Bus) -> int:
    return (await bus.js.stream_info("DLQ")).state.messages


async def run(per_subject: int, n_tools: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="kpilot-fuzz-"))
    state, port = tmp / "state", free_port()
    url = f"nats://127.0.0.1:{port}"
    t_up = time.monotonic()
    if await asyncio.to_thread(up, state, port, detach=True, timeout_s=200) != 0:
        raise SystemExit("kpilot up failed; see the logs under " + str(state / "logs"))
    up_s = time.monotonic() - t_up
    server = EmbeddedServer(state, port=port)
    buses: dict[str, Bus] = {}
    try:
        for who in ("operator", "planner", "verifier", "telemetry"):
            buses[who] = await Bus.connect(server.url(who), f"fuzz-{who}")
        op = buses["operator"]
        sent: Counter[str] = Counter()
        expected = 0
        per_family: dict[str, dict[str, int]] = {}
        t0 = time.monotonic()
        for f in families():
            n_sent, n_expected = 0, 0
            for i in range(per_subject):
                kind = KINDS[i % len(KINDS)]
                if kind == "huge" and i >= len(KINDS) * 2:
                    kind = "deep_3000"  # two huge messages per subject: enough, and they are 1.5 MiB each
                await buses[f.publisher].js.publish(f.subject, malformed(f, kind))
                sent[kind] += 1
                n_sent += 1
                n_expected += len(f.typed) + (len(f.untyped) if kind != "other_type" else 0)
            expected += n_expected
            per_family[f.subject] = {"sent": n_sent, "expected_dead_letters": n_expected,
                                     "consumers": len(f.typed) + len(f.untyped)}
        publish_s = time.monotonic() - t0
        deadline, stored = time.monotonic() + 240, 0
        while time.monotonic() < deadline:
            stored = await dlq_count(op)
            if stored >= expected:
                break
            await asyncio.sleep(0.5)
        dlq_s = time.monotonic() - t0

        rows = await status(url)
        runner = next(r for r in rows if r["name"] == "toolrunner")
        tools = sorted(t for t in runner["details"].get("tools", "").split(",") if t)
        answers: Counter[str] = Counter()
        by_label: dict[str, Counter[str]] = {}
        t1 = time.monotonic()
        for label, subject, payload in bad_tool_calls(n_tools, tools, rng, tmp):
            try:
                reply = await op.nc.request(subject, payload, timeout=120)
                if reply.headers and reply.headers.get("Nats-Service-Error"):
                    outcome = f"micro_error:{reply.headers.get('Nats-Service-Error-Code')}"
                else:
                    doc = json.loads(reply.data)
                    err = doc.get("error") or {}
                    outcome = ("ok" if doc.get("ok") else f"error:{err.get('code', '?')}") if isinstance(doc, dict) \
                        else "answer"
            except nats.errors.TimeoutError:
                outcome = "no_answer"
            except nats.errors.NoRespondersError:
                outcome = "no_responder"
            answers[outcome] += 1
            by_label.setdefault(label, Counter())[outcome] += 1
        tools_s = time.monotonic() - t1
        await asyncio.sleep(1.0)  # one health round after the last call
        rows = [r for r in await status(url) if r["kind"] == "service"]  # not the nats-server rows
        st = read_state(state, port)
        restarts = {n: c.restarts for n, c in (st.children if st else {}).items()}
        unhealthy = [r["name"] for r in rows if not r["healthy"]]
        dead_consumers = {r["name"]: r["details"]["dead"] for r in rows if r["details"].get("dead")}
        stored = await dlq_count(op)
    finally:
        for b in buses.values():
            await b.close()
        await asyncio.to_thread(down, state, port)
    answered = sum(v for k, v in answers.items() if k not in ("no_answer", "no_responder"))
    return {
        "run_id": f"fuzz-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}",
        "commit": commit(),
        "device": f"this CPU machine ({platform.node()}, {platform.processor() or platform.machine()}, "
                  f"2 cores shared with other agents); no GPU",
        "seed": seed,
        "messages": {"sent": sum(sent.values()), "by_kind": dict(sent), "subjects": per_family},
        "dead_letters": {"expected": expected, "stored": stored, "missing": max(expected - stored, 0)},
        "tool_calls": {"sent": n_tools, "answered": answered, "outcomes": dict(answers),
                       "by_kind": {k: dict(v) for k, v in sorted(by_label.items())}},
        "crashes": sum(restarts.values()) + len(unhealthy),
        "restarts": restarts, "unhealthy": unhealthy, "dead_consumers": dead_consumers,
        "seconds": {"up": round(up_s, 1), "publish": round(publish_s, 1), "dead_lettered": round(dlq_s, 1),
                    "tool_calls": round(tools_s, 1)},
    }


def markdown(r: dict[str, Any]) -> str:
    m, d, t = r["messages"], r["dead_letters"], r["tool_calls"]
    lines = [
        "# Bus fuzz run (`benchmarks/fuzz_bus.py`)", "",
        ("| run id | commit | device | messages sent | dead letters expected / stored | tool calls answered "
        "| crashes |"),
        "|---|---|---|---|---|---|---|",
        (f"| {r['run_id']} | {r['commit']} | {r['device']} | {m['sent']} over {len(m['subjects'])} subjects | "
        f"{d['expected']} / {d['stored']} | {t['answered']} of {t['sent']} | {r['crashes']} |"), "",
        "| subject | sent | consuming durables | expected dead letters |", "|---|---|---|---|",
        *[f"| `{s}` | {v['sent']} | {v['consumers']} | {v['expected_dead_letters']} |" for s, v in m["subjects"].items()],
        "", "| tool call outcome | count |", "|---|---|",
        *[f"| {k} | {v} |" for k, v in sorted(t["outcomes"].items())], "",
        (f"Timing: up {r['seconds']['up']} s, publish {r['seconds']['publish']} s, all dead letters stored after "
        f"{r['seconds']['dead_lettered']} s, tool calls {r['seconds']['tool_calls']} s. Restarts per process: "
        f"{r['restarts']}; unhealthy at the end: {r['unhealthy'] or 'none'}."), "",
    ]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--per-subject", type=int, default=64, help="malformed messages per subject (10 subjects)")
    p.add_argument("--tool-calls", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "fuzz.json")
    a = p.parse_args()
    result = asyncio.run(run(a.per_subject, a.tool_calls, a.seed))
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    a.out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
