"""kpilot optimize TASK.py | kpilot train-classifier.

`optimize` prints a line as each candidate is queued and decided (nothing but the JSON with `--json`), and
exits 0 when the job got a verified patch, 3 when it ended with a proposed patch or nothing verified, 1 on
an error. Ctrl-C says the job id and asks whether to cancel the job (`kpilot cancel`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

from services.kpilot.commands.common import nats_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("optimize", help="ask the planner to optimise a task; wait and print the outcome")
    nats_arg(p)
    p.add_argument("task", type=Path, help="the kernel task file (examples/README.md)")
    p.add_argument("--kernel", default="", help="kernel name (default: the task's primary kernel)")
    p.add_argument("--budget", type=float, default=300.0, help="wall-clock budget of the job, s")
    p.add_argument("--gpu-budget", type=float, default=600.0, help="GPU seconds the verifier may spend")
    p.add_argument("--max-candidates", type=int, default=48)
    p.add_argument("--policy", choices=("rules", "llm"), default="rules")
    p.add_argument(
        "--patch-wait",
        type=float,
        default=15.0,
        help="longest wait after the job ends for the critic's outcomes (verified/proposed/rejected)",
    )
    p.add_argument("--json", action="store_true", help="print the outcome as one JSON object")
    p.set_defaults(func=_optimize)

    p = sub.add_parser(
        "train-classifier", help="retrain the planner's failure classifier and report held-out accuracy"
    )
    nats_arg(p)
    p.add_argument(
        "--jsonl",
        type=Path,
        help="train from a JSONL file of records instead of the FAILURES and JOBS history on the bus",
    )
    p.add_argument("--out", type=Path, default=Path(".kpilot/classifier.json"), help="model file to write")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_train)


# Exit status of `kpilot optimize`: a verified patch (measured on the GPU) / the job ended with a proposed
# patch or nothing verified / an error (the job failed, no final update, bad input).
EXIT_VERIFIED, EXIT_UNVERIFIED, EXIT_ERROR = 0, 3, 1


def _optimize(args: argparse.Namespace) -> int:
    from shared.ids import new_id

    if not args.task.is_file():
        raise ValueError(f"no task file {args.task}; pass a kernel task such as examples/matmul.py")
    job_id = f"job-{new_id()}"
    progress = None if args.json else _progress
    try:
        out = asyncio.run(optimize(args.nats, args.task.resolve(), args, job_id=job_id, progress=progress))
    except KeyboardInterrupt:
        return _interrupted(args.nats, job_id)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        _print(out)
    return exit_status(out)


def exit_status(out: dict) -> int:
    """0: a verified patch for the job; 3: the job ended with a proposed patch or nothing verified;
    1: it failed or never ended."""
    from shared.messages import JOB_ENDED

    if out["status"] not in JOB_ENDED or out["status"] == "failed":
        return EXIT_ERROR
    if any(p["subject"].startswith("patches.verified.") for p in out["patches"]):
        return EXIT_VERIFIED
    return EXIT_UNVERIFIED


def _interrupted(url: str, job_id: str) -> int:
    """Ctrl-C: the job runs on in the planner; say its id and offer to cancel it (stderr: stdout may be
    JSON)."""
    import sys

    from services.kpilot.commands.cancel import cancel_job

    print(f"\ninterrupted: job {job_id} goes on in the planner", file=sys.stderr)
    how = f"kpilot cancel {job_id} --nats {url}"
    if not sys.stdin.isatty():
        print(f"cancel it with: {how}", file=sys.stderr)
        return 130
    try:
        answer = input(f"cancel job {job_id}? [y/N] ")
    except (EOFError, KeyboardInterrupt):
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        print(f"left running; cancel it later with: {how}", file=sys.stderr)
        return 130
    code, text = asyncio.run(cancel_job(url, job_id, "cancelled by Ctrl-C on kpilot optimize", 30.0))
    print(text, file=sys.stderr)
    return 130 if code == 0 else EXIT_ERROR


def _progress(line: str) -> None:
    print(line, flush=True)


async def optimize(url: str, task: Path, args: argparse.Namespace, *, job_id: str | None = None,
                   progress: Callable[[str], None] | None = None) -> dict:
    import msgspec

    from shared.bus import Bus
    from shared.ids import new_id
    from shared.messages import (
        JOB_ENDED,
        Candidate,
        JobUpdate,
        OptimizeRequest,
        ProposedPatch,
        Verdict,
        VerifiedPatch,
        decode,
    )
    from shared.signing import trusted_key
    from shared.signing import verify as verify_signature
    from shared.subjects import OPTIMIZE_REQUEST

    say = progress or (lambda _line: None)
    clock = {"t0": time.monotonic()}  # reset when the request is published

    def since() -> float:  # seconds since the request; each candidate, verdict and patch row carries it
        return round(time.monotonic() - clock["t0"], 3)

    bus = await Bus.connect(url, "kpilot")
    critic_key = await trusted_key(bus.js)  # every verified patch's signature is checked against it
    req = OptimizeRequest(
        source="kpilot",
        task_path=str(task),
        kernel=args.kernel,
        budget_s=args.budget,
        gpu_budget_s=args.gpu_budget,
        max_candidates=args.max_candidates,
        policy=args.policy,
        job_id=job_id or f"job-{new_id()}",
    )
    state: dict = {
        "job_id": req.job_id,
        "status": "open",
        "updates": [],
        "candidates": {},
        "verdicts": [],
        "patches": [],
        "request_id": req.id,
    }
    finished = asyncio.Event()
    settled = asyncio.Event()  # the job ended and the critic decided every finished candidate
    decided: set[str] = set()  # candidates with a final verdict (a failed layer or the full layer)
    outcome: set[str] = set()  # candidates the critic published a patch or rejection for

    def version(cid: str) -> str:
        c = state["candidates"].get(cid)
        return f"v{c['version']}" if c else cid

    def check_settled() -> None:
        verified = any(p["subject"].startswith("patches.verified.") for p in state["patches"])
        if finished.is_set() and (verified or decided <= outcome):
            settled.set()

    async def on_msg(m) -> None:
        try:
            msg = decode(m.data)
        except Exception:  # noqa: BLE001 - another client's bad message is not ours to fix
            return
        if isinstance(msg, JobUpdate) and (msg.job_id == state["job_id"] or req.id in msg.note):
            state["job_id"] = msg.job_id
            state["status"] = msg.status
            state["updates"].append(msgspec.to_builtins(msg))
            say(f"job {msg.job_id}: {msg.status}" + (f" ({msg.note[:120]})" if msg.note else ""))
            if msg.status in JOB_ENDED:
                finished.set()
        elif isinstance(msg, Candidate) and msg.job_id == state["job_id"]:
            state["candidates"][msg.id] = {
                "version": msg.version,
                "parent_id": msg.parent_id,
                "config": msg.config,
                "path": msg.candidate_path,
                "diff": msg.diff,
                "changes": msgspec.to_builtins(msg.changes),
                "llm": msgspec.to_builtins(msg.llm) if msg.llm else None,
                "t_s": since(),
            }
            say(f"  v{msg.version} queued: config {msg.config}")
        elif isinstance(msg, Verdict) and msg.job_id == state["job_id"]:
            state["verdicts"].append(
                {
                    "candidate_id": msg.candidate_id,
                    "layer": msg.layer,
                    "status": msg.status,
                    "reasons": msg.reasons,
                    "measurements": msgspec.to_builtins(msg.measurements),
                    "gpu_seconds": msg.gpu_seconds,
                    "provenance": msgspec.to_builtins(msg.provenance),
                    "wall_s": msg.wall_s,
                    "t_s": since(),
                }
            )
            if msg.status != "withdrawn" and (msg.status == "fail" or msg.layer == "full"):
                decided.add(msg.candidate_id)  # the critic will publish an outcome for it
            if msg.status in ("fail", "withdrawn") or msg.layer == "full":
                why = "; ".join(msg.reasons)[:120]
                say(f"  {version(msg.candidate_id)} {msg.layer}: {msg.status}" + (f" ({why})" if why else ""))
        elif msg.job_id == state["job_id"] and m.subject.startswith("patches."):
            cid = getattr(msg, "candidate_id", "")
            row = {"subject": m.subject, "candidate_id": cid, "t_s": since()}
            if isinstance(msg, VerifiedPatch | ProposedPatch):
                row |= {
                    "diff": msg.diff,
                    "config": msg.config,
                    "speedup": msgspec.to_builtins(msg.speedup) if msg.speedup else None,
                    "signature": msgspec.to_builtins(verify_signature(msg, critic_key)),
                    "version": msg.version,
                    "evidence_chain": msgspec.to_builtins(msg.evidence_chain),
                }
            if isinstance(msg, ProposedPatch):
                row["not_verified"] = msg.not_verified
            elif not isinstance(msg, VerifiedPatch):
                row["reasons"] = getattr(msg, "reasons", None) or getattr(msg, "reason", "")
            state["patches"].append(row)
            outcome.add(cid)
            kind = m.subject.split(".")[1]
            say(f"  {version(cid)} {kind}" + (f": {row['not_verified']}" if "not_verified" in row else ""))
        check_settled()

    subs = [
        await bus.nc.subscribe(s, cb=on_msg) for s in ("jobs.>", "candidates.>", "verdicts.>", "patches.>")
    ]
    try:
        clock["t0"] = time.monotonic()
        await bus.publish(OPTIMIZE_REQUEST, req)
        say(f"job {req.job_id} requested for {task.name} (Ctrl-C: choose to cancel it or leave it running)")
        try:
            await asyncio.wait_for(finished.wait(), timeout=args.budget + 120.0)
        except TimeoutError:
            state["status"] = "timeout"
            state["reasons"] = [
                (
                    f"no final job update within {args.budget + 120:.0f} s: is the planner up "
                    "(`kpilot status`)?"
                )
            ]
        if finished.is_set():
            check_settled()
            try:  # the critic decides from the same verdicts: its outcomes can trail the job's end
                await asyncio.wait_for(settled.wait(), timeout=args.patch_wait)
            except TimeoutError:
                pass
    finally:
        for s in subs:
            await s.unsubscribe()
        await bus.close()
    last = state["updates"][-1] if state["updates"] else {}
    state["best_candidate_id"] = last.get("best_candidate_id")
    state["best_score"] = last.get("best_score")
    state["score_name"] = last.get("score_name", "")
    state.setdefault("reasons", last.get("reasons", []))
    state["wall_s"] = since()  # request to the last outcome waited for
    return state


def _print(out: dict) -> None:
    print(
        f"job {out['job_id']}: {out['status']}"
        + (f" ({'; '.join(out['reasons'])})" if out["reasons"] else "")
    )
    print(f"candidates: {len(out['candidates'])}, verdicts: {len(out['verdicts'])}")
    best = out.get("best_candidate_id")
    if best:
        c = out["candidates"].get(best, {})
        print(f"best: {best} {out['score_name']}={out['best_score']:.4g} config {c.get('config')}")
        print(f"      file {c.get('path')}")
    else:
        print("best: none measured")
    for p in out["patches"]:
        sig = p.get("signature")
        mark = "" if sig is None else (f" [signature ok: {sig['reason']}]" if sig["ok"] else
                                       f" [SIGNATURE FAILED: {sig['reason']}: do not apply]")
        print(
            f"patch {p['subject']} {p['candidate_id']}:{mark} "
            + (f"(not verified: {p['not_verified']})" if "not_verified" in p else "")
            + ("\n" + p["diff"] if "diff" in p else str(p.get("reasons")))
        )
    code = exit_status(out)
    if code == EXIT_UNVERIFIED:
        print("outcome: nothing verified (exit 3): "
              + ("a proposed patch is correct but its speed was not measured on the GPU"
                 if any("not_verified" in p for p in out["patches"]) else "no candidate was verified"))


def _train(args: argparse.Namespace) -> int:
    from services.planner.classifier import load_jsonl, records_from_bus, train

    records = load_jsonl(args.jsonl) if args.jsonl else asyncio.run(records_from_bus(args.nats))
    report = train(records, args.out, seed=args.seed)
    print(json.dumps(report.summary(), indent=2))
    return 0
