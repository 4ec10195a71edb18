"""Time the llm policy's kept candidates through the verifier's funnel on this machine -> JSON + table.

    python3 benchmarks/llm_timed.py benchmarks/results/llm/<run>_candidates --out $OUT/llm_timed \
        --per-task 1 --total-s 400

`benchmarks/bench_llm.py --keep DIR` writes the candidates a real model proposed for the suite tasks (one
task file each, the patcher's output) and `DIR/index.json`. The model runs where its weights are (this
development machine); its candidates are timed here, on the GPU, by the same funnel the product runs
(`services.verifier.funnel.verify`: static, micro correctness, full timing against the task as written,
the speedup's 95 % CI and the verifier's acceptance rule). A candidate whose full layer passes is a
verified gain; every other outcome keeps the layer and the verifier's reasons.

Candidates are taken in the model's own order within a task (its rank), `--per-task` per task, tasks in
the index's order; no candidate is started after `--total-s`, and the JSON is rewritten after each
candidate so a cut-off run keeps what it measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def pick(index: list[dict[str, Any]], per_task: int, tasks: set[str] | None) -> list[dict[str, Any]]:
    """The candidates to time: each task's best-ranked `per_task`, tasks in first-seen order."""
    seen: dict[str, int] = {}
    out = []
    for row in sorted(index, key=lambda r: (list(dict.fromkeys(x["task"] for x in index)).index(r["task"]),
                                            r["rank"])):
        if tasks and Path(row["task"]).stem not in tasks:
            continue
        if seen.get(row["task"], 0) < per_task:
            seen[row["task"]] = seen.get(row["task"], 0) + 1
            out.append(row)
    return out


def outcome(verdicts: list[Any]) -> dict[str, Any]:
    """What the funnel said: each layer's status, the first failure's reasons, the full layer's speedup."""
    failed = [v for v in verdicts if v.status == "fail"]
    full = next((v for v in verdicts if v.layer == "full"), None)
    speed = next((m for m in (full.measurements if full else []) if m.name == "speedup"), None)
    return {
        "statuses": {v.layer: v.status for v in verdicts},
        "failed_at": failed[0].layer if failed else None,
        "reasons": list(failed[0].reasons[:3]) if failed else (list(full.reasons[:2]) if full else []),
        "speedup": None if speed is None else speed.value,
        "ci": None if speed is None else [speed.low, speed.high],
        "verified": bool(full and full.status == "pass"),
        "device": full.provenance.device if full else "",
    }


async def time_one(keep: Path, row: dict[str, Any]) -> dict[str, Any]:
    from services.toolrunner.registry import local_executor
    from services.verifier.funnel import VerifyJob, verify
    from shared.ids import new_id
    from shared.toolclient import InProcessToolClient

    t0 = time.perf_counter()
    job = VerifyJob(candidate_id=new_id(), task_path=str(ROOT / row["task"]),
                    candidate_path=str((keep / row["candidate"]).resolve()))
    verdicts = await verify(job, InProcessToolClient(local_executor(), source="llm_timed"))
    return {**row, **outcome(verdicts), "wall_s": round(time.perf_counter() - t0, 1)}


def table(result: dict[str, Any]) -> str:
    head = (f"Run {result['run_id']}, commit {result['commit'][:12]}, {result['device']}; candidates from "
            f"{result['source_run']} ({result['model']}).")
    out = [head, "",
           "| task | changes (model's rank) | static | micro | full | speedup [95 % CI] | verified | s |",
           "|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        st = r.get("statuses", {})
        sp = "-" if r.get("speedup") is None else f"{r['speedup']:.3f}x [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"
        why = "" if r.get("verified") else ("; " + r["reasons"][0][:90] if r.get("reasons") else "")
        out.append(f"| {Path(r['task']).stem} | {', '.join(r['kinds'])} (#{r['rank']}) | {st.get('static', '-')} | "
                   f"{st.get('micro', '-')} | {st.get('full', '-')} | {sp} | "
                   f"{'yes' if r.get('verified') else 'no' + why} | {r.get('wall_s', '-')} |")
    out.append("")
    out.append(f"{sum(bool(r.get('verified')) for r in result['rows'])} of {len(result['rows'])} timed candidates "
               f"verified; not started (time): {result['not_started']}.")
    return "\n".join(out) + "\n"


async def run(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(ROOT))
    keep: Path = args.keep
    index = json.loads((keep / "index.json").read_text())
    todo = pick(index, args.per_task, set(args.tasks.split(",")) if args.tasks else None)
    commit = args.commit
    result: dict[str, Any] = {
        "what": "the llm policy's candidates (bench_llm --keep) through the verifier's funnel (llm_timed.py)",
        "run_id": args.run_id or time.strftime("llm-timed-%Y%m%dT%H%M%SZ", time.gmtime()),
        "commit": commit, "device": args.device or platform.node(),
        "source_run": index[0]["run_id"] if index else "", "model": index[0]["model"] if index else "",
        "model_sha256": index[0]["model_sha256"] if index else "",
        "rows": [], "not_started": 0,
    }
    t_start = time.monotonic()
    for n, row in enumerate(todo):
        if time.monotonic() - t_start > args.total_s:
            result["not_started"] = len(todo) - n
            break
        try:
            got = await time_one(keep, row)
        except Exception as e:  # noqa: BLE001 - one candidate's crash is its outcome, the run goes on
            got = {**row, "statuses": {}, "failed_at": "error", "reasons": [f"{type(e).__name__}: {e}"[:300]],
                   "speedup": None, "ci": None, "verified": False}
        result["rows"].append(got)
        print(f"{Path(row['task']).stem:32s} #{row['rank']} {got.get('statuses')} {got.get('speedup')}", flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(table(result))
    print(table(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("keep", type=Path, help="a bench_llm --keep folder (task files + index.json)")
    ap.add_argument("--out", type=Path, required=True, help="path stem: writes <out>.json and <out>.md")
    ap.add_argument("--per-task", type=int, default=1)
    ap.add_argument("--tasks", default="", help="comma-separated task stems (default: every task in the index)")
    ap.add_argument("--total-s", type=float, default=400.0, help="start no candidate after this many seconds")
    ap.add_argument("--run-id", default="")
    ap.add_argument("--commit", default="")
    ap.add_argument("--device", default="")
    args = ap.parse_args(argv)
    # In a ledger run the runner's stamp names the commit (the device's checkout has another HEAD: r55's
    # JSON said 3ebcaee for 2783f59); elsewhere HEAD, read before the run.
    args.commit = args.commit or os.environ.get("KPILOT_RUN_COMMIT", "")
    if not args.commit:
        import subprocess
        args.commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                     check=False).stdout.strip()
    return asyncio.run(run(args))


if __name__ == "__main__":
    raise SystemExit(main())
