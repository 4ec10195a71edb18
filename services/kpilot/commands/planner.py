"""kpilot optimize TASK.py | kpilot train-classifier."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from services.kpilot.commands.common import nats_arg

TERMINAL = ("converged", "budget_exhausted", "roofline", "failed", "done")


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
        help="seconds to wait after the job ends for the critic's verified/rejected patch",
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


def _optimize(args: argparse.Namespace) -> int:
    if not args.task.is_file():
        raise ValueError(f"no task file {args.task}; pass a kernel task such as examples/matmul.py")
    out = asyncio.run(optimize(args.nats, args.task.resolve(), args))
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        _print(out)
    return 0 if out["status"] in ("converged", "roofline", "done", "budget_exhausted") else 1


async def optimize(url: str, task: Path, args: argparse.Namespace) -> dict:
    import msgspec

    from shared.bus import Bus
    from shared.ids import new_id
    from shared.messages import Candidate, JobUpdate, OptimizeRequest, Verdict, VerifiedPatch, decode
    from shared.subjects import OPTIMIZE_REQUEST

    bus = await Bus.connect(url, "kpilot")
    req = OptimizeRequest(
        source="kpilot",
        task_path=str(task),
        kernel=args.kernel,
        budget_s=args.budget,
        gpu_budget_s=args.gpu_budget,
        max_candidates=args.max_candidates,
        policy=args.policy,
        job_id=f"job-{new_id()}",
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
    ended_at: list[float] = []

    async def on_msg(m) -> None:
        try:
            msg = decode(m.data)
        except Exception:  # noqa: BLE001 - another client's bad message is not ours to fix
            return
        if isinstance(msg, JobUpdate) and (msg.job_id == state["job_id"] or req.id in msg.note):
            state["job_id"] = msg.job_id
            state["status"] = msg.status
            state["updates"].append(msgspec.to_builtins(msg))
            if msg.status in TERMINAL:
                ended_at.append(time.monotonic())
                finished.set()
        elif isinstance(msg, Candidate) and msg.job_id == state["job_id"]:
            state["candidates"][msg.id] = {
                "version": msg.version,
                "config": msg.config,
                "path": msg.candidate_path,
                "diff": msg.diff,
                "llm": msgspec.to_builtins(msg.llm) if msg.llm else None,
            }
        elif isinstance(msg, Verdict) and msg.job_id == state["job_id"]:
            state["verdicts"].append(
                {
                    "candidate_id": msg.candidate_id,
                    "layer": msg.layer,
                    "status": msg.status,
                    "reasons": msg.reasons,
                    "measurements": msgspec.to_builtins(msg.measurements),
                }
            )
        elif msg.job_id == state["job_id"] and m.subject.startswith("patches."):
            row = {"subject": m.subject, "candidate_id": getattr(msg, "candidate_id", "")}
            if isinstance(msg, VerifiedPatch):
                row |= {
                    "diff": msg.diff,
                    "config": msg.config,
                    "speedup": msgspec.to_builtins(msg.speedup) if msg.speedup else None,
                }
            else:
                row["reasons"] = getattr(msg, "reasons", None) or getattr(msg, "reason", "")
            state["patches"].append(row)

    subs = [
        await bus.nc.subscribe(s, cb=on_msg) for s in ("jobs.>", "candidates.>", "verdicts.>", "patches.>")
    ]
    try:
        await bus.publish(OPTIMIZE_REQUEST, req)
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
            await asyncio.sleep(args.patch_wait)
    finally:
        for s in subs:
            await s.unsubscribe()
        await bus.close()
    last = state["updates"][-1] if state["updates"] else {}
    state["best_candidate_id"] = last.get("best_candidate_id")
    state["best_score"] = last.get("best_score")
    state["score_name"] = last.get("score_name", "")
    state.setdefault("reasons", last.get("reasons", []))
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
    for v in out["verdicts"][-6:]:
        print(f"  {v['candidate_id']} {v['layer']}: {v['status']} {'; '.join(v['reasons'])[:120]}")
    for p in out["patches"]:
        print(
            f"patch {p['subject']} {p['candidate_id']}: "
            + ("\n" + p["diff"] if "diff" in p else str(p.get("reasons")))
        )


def _train(args: argparse.Namespace) -> int:
    from services.planner.classifier import load_jsonl, records_from_bus, train

    records = load_jsonl(args.jsonl) if args.jsonl else asyncio.run(records_from_bus(args.nats))
    report = train(records, args.out, seed=args.seed)
    print(json.dumps(report.summary(), indent=2))
    return 0
