"""Fault run: kill -9 each service and nats-server mid-job on a real stack; count lost and duplicated work.

    python benchmarks/fault_run.py [--targets verifier,toolrunner,...] [--out benchmarks/results/faults.json]

`kpilot up` (the supervisor, nats-server with file storage, the six services) in a temporary state dir.
For each target, one job: an optimize request for examples/vector_add.py (rules policy, at most
`--candidates` candidates); once the job's first candidate is stored, the target is sent SIGKILL (from
the pid in the stack's state file). Measured per fault:
- recovery: seconds from the kill until the supervisor had restarted the target and every service
  answered healthy again (nats-server: until it listened again and every service was healthy);
- the job: its final status in the `jobs` bucket, or "not finished" at the deadline;
- lost candidates: stored candidates of the job without a final verdict (a fail, or the full layer) or
  without the critic's decision (a verified, proposed or rejected patch) at the end;
- duplicates: a (candidate, layer) verdict stored twice, a candidate decided twice, a message id stored
  twice.
The stack stays up across faults (each fault's recovery is what the next job starts from).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import nats.errors
import nats.js.errors

from benchmarks.fuzz_bus import commit
from services.kpilot.observe import status
from services.kpilot.stack import NATS, down, read_state, up
from shared.bus import Bus
from shared.ids import new_id
from shared.messages import Candidate, Message, OptimizeRequest, Verdict, decode
from shared.natsserver import free_port, port_open
from shared.subjects import OPTIMIZE_REQUEST, SERVICE_NAMES

ROOT = Path(__file__).resolve().parents[1]
TERMINAL = ("converged", "budget_exhausted", "roofline", "failed", "done")
TARGETS = (*SERVICE_NAMES, NATS)


async def stored(bus: Bus, stream: str) -> list[tuple[str, Message]]:
    info = await bus.js.stream_info(stream)
    got: list[tuple[str, Message]] = []
    if not info.state.messages:
        return got
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            raw = await bus.js.get_msg(stream, seq)
            got.append((raw.subject or "", decode(raw.data or b"")))
        except (nats.js.errors.NotFoundError, msgspec.DecodeError, msgspec.ValidationError):
            continue
    return got


async def job_status(bus: Bus, job_id: str) -> str | None:
    from services.planner import jobs  # the job record's one decoder
    try:
        entry = await (await bus.js.key_value("jobs")).get(job_id)
    except nats.errors.Error:
        return None
    return jobs.decode_state(entry.value or b"").status


async def wait_for(check, timeout_s: float, every_s: float = 0.5) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if await check():
                return True
        except Exception:  # noqa: BLE001, S110 - the server is restarting: ask again
            pass
        await asyncio.sleep(every_s)
    return False


async def one_fault(url: str, state: Path, port: int, target: str, candidates: int,
                    timeout_s: float) -> dict[str, Any]:
    bus = await Bus.connect(url, "kpilot")
    req = OptimizeRequest(source="kpilot", task_path=str(ROOT / "examples/vector_add.py"), budget_s=timeout_s,
                          gpu_budget_s=60.0, max_candidates=candidates, policy="rules", job_id=f"job-{new_id()}")
    await bus.publish(OPTIMIZE_REQUEST, req)

    async def first_candidate() -> bool:
        return any(m.job_id == req.job_id for _, m in await stored(bus, "CANDIDATES"))

    if not await wait_for(first_candidate, 120):
        await bus.close()
        return {"target": target, "error": "the job published no candidate within 120 s"}
    before = read_state(state, port)
    assert before is not None
    pid = before.children[target].pid
    restarts = before.children[target].restarts
    os.kill(pid, signal.SIGKILL)
    t_kill = time.monotonic()

    async def recovered() -> bool:
        st = read_state(state, port)
        if st is None or st.children[target].restarts <= restarts or st.children[target].pid == pid:
            return False
        if not port_open("127.0.0.1", port):
            return False
        rows = await status(url)
        return all(r["healthy"] for r in rows if r["name"] in SERVICE_NAMES) and \
            {r["name"] for r in rows} >= set(SERVICE_NAMES)

    ok = await wait_for(recovered, 120, every_s=0.2)
    recovery_s = time.monotonic() - t_kill if ok else None

    async def job_done() -> bool:
        return await job_status(bus, req.job_id or "") in TERMINAL

    finished = await wait_for(job_done, timeout_s)
    cands = [m for _, m in await stored(bus, "CANDIDATES") if isinstance(m, Candidate) and m.job_id == req.job_id]
    ids = {c.id for c in cands}

    async def all_decided() -> bool:
        got = {getattr(m, "candidate_id", None) for _, m in await stored(bus, "PATCHES") if m.job_id == req.job_id}
        return ids <= got

    await wait_for(all_decided, 60)  # the critic waits out its grace for the last chain
    verdicts = [m for _, m in await stored(bus, "VERDICTS") if isinstance(m, Verdict) and m.job_id == req.job_id]
    patches = [(s, m) for s, m in await stored(bus, "PATCHES") if m.job_id == req.job_id]
    everything = [m for name in ("CANDIDATES", "VERDICTS", "PATCHES") for _, m in await stored(bus, name)
                  if m.job_id == req.job_id]
    final = {v.candidate_id for v in verdicts if v.layer == "full" or v.status == "fail"}
    decided = Counter(getattr(m, "candidate_id", None) for _, m in patches)
    layer_counts = Counter((v.candidate_id, v.layer) for v in verdicts)
    status_now = await job_status(bus, req.job_id or "")
    await bus.close()
    return {
        "target": target, "killed_pid": pid, "recovery_s": round(recovery_s, 2) if recovery_s else None,
        "job": status_now if finished else f"not finished within {timeout_s:g} s ({status_now})",
        "candidates": len(ids),
        "lost_candidates": sorted(ids - (final & set(decided))),
        "duplicate_verdicts": [f"{c}:{layer}" for (c, layer), n in layer_counts.items() if n > 1],
        "duplicate_decisions": [c for c, n in decided.items() if n > 1],
        "duplicate_ids": [i for i, n in Counter(m.id for m in everything).items() if n > 1],
        "patches": sorted(Counter(s.split(".")[1] for s, _ in patches).items()),
    }


async def run(targets: list[str], candidates: int, timeout_s: float) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="kpilot-faults-"))
    state, port = tmp / "state", free_port()
    url = f"nats://127.0.0.1:{port}"
    if await asyncio.to_thread(up, state, port, detach=True, timeout_s=200) != 0:
        raise SystemExit(f"kpilot up failed; logs in {state / 'logs'}")
    faults = []
    try:
        for target in targets:
            t0 = time.monotonic()
            res = await one_fault(url, state, port, target, candidates, timeout_s)
            res["wall_s"] = round(time.monotonic() - t0, 1)
            print(json.dumps(res), flush=True)
            faults.append(res)
        st = read_state(state, port)
        restarts = {n: c.restarts for n, c in (st.children if st else {}).items()}
    finally:
        await asyncio.to_thread(down, state, port)
    return {
        "run_id": f"faults-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}",
        "commit": commit(),
        "device": f"this CPU machine ({platform.node()}, 2 cores shared with other agents); no GPU: the funnel "
                  "ran static checks and interpreter correctness",
        "job": f"examples/vector_add.py, rules policy, at most {candidates} candidates per job",
        "faults": faults,
        "totals": {
            "lost_candidates": sum(len(f.get("lost_candidates", [])) for f in faults),
            "duplicate_patches": sum(len(f.get("duplicate_decisions", [])) for f in faults),
            "duplicate_verdicts": sum(len(f.get("duplicate_verdicts", [])) for f in faults),
            "jobs_not_finished": sum(1 for f in faults if str(f.get("job", "")).startswith("not finished")),
        },
        "restarts_at_end": restarts,
    }


def markdown(r: dict[str, Any]) -> str:
    rows = [f"| {f['target']} | {f.get('recovery_s', '-')} | {f.get('job', f.get('error'))} | "
            f"{f.get('candidates', '-')} | {len(f.get('lost_candidates', []))} | "
            f"{len(f.get('duplicate_decisions', []))} | {len(f.get('duplicate_verdicts', []))} | "
            f"{f.get('wall_s', '-')} |" for f in r["faults"]]
    t = r["totals"]
    return "\n".join([
        "# Fault run (`benchmarks/fault_run.py`)", "",
        f"Run `{r['run_id']}`, commit `{r['commit']}`, device: {r['device']}. Job: {r['job']}.", "",
        "| SIGKILL of | recovery (s) | job | candidates | lost | duplicate patches | duplicate verdicts | wall (s) |",
        "|---|---|---|---|---|---|---|---|", *rows, "",
        (f"Totals: {t['lost_candidates']} lost candidates, {t['duplicate_patches']} duplicate patches, "
        f"{t['duplicate_verdicts']} duplicate verdicts, {t['jobs_not_finished']} jobs not finished. Recovery: "
        "from the kill until the supervisor restarted the process and every service answered healthy."), "",
    ])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--targets", default=",".join(TARGETS))
    p.add_argument("--candidates", type=int, default=2)
    p.add_argument("--job-timeout", type=float, default=300.0)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "faults.json")
    a = p.parse_args()
    result = asyncio.run(run([t for t in a.targets.split(",") if t], a.candidates, a.job_timeout))
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    a.out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
