"""The llm policy against a real model server, round by round, next to the rules policy on the same
contexts -> JSON + a Markdown table.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_llm.py --url http://127.0.0.1:8012 \
        --model smollm2-135m-instruct-q4_1 --sha256 <weights sha256> --max-seconds 600 \
        --funnel-budget-s 300 --out benchmarks/results/llm/smollm2_135m

Contexts (tests/fixtures/llm/contexts.py): every planted corpus case with its real decomposition (the
findings and IR summary with line references; a made-up SPACE around the captured config; no launch(), so
these are checked for schema validity and patch application only), then every suite task file
(benchmarks/tasks, no decomposition: compiling 22 tasks for it would eat the CPU budget), interleaved so a
time-bounded run covers both. One round = one `LlmPolicy.propose` (the shipped policy, its retries and
rules fallback included) and one `RulesPolicy.propose` on the same context; every candidate goes through
the shipped patcher (`make_candidate`). For suite tasks the first applied candidate of each policy goes
through the verifier's funnel in this process (static -> micro on CPU: Triton's interpreter; full is
`skipped: no GPU`) while `--funnel-budget-s` lasts.

Figures: schema-valid rate over every answer the server gave (decodes as a Plan and lies inside the
offered domains), plans that fell back to rules and why, patch-apply failure rate over proposed
candidates, funnel outcomes, server-counted tokens and wall seconds per plan, and agreement with rules.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]


def _answers(exchanges: list[dict[str, Any]]) -> list[str]:
    out = []
    for e in exchanges:
        if e["status"] == 200 and isinstance(e["response"], dict):
            try:
                out.append(e["response"]["choices"][0]["message"].get("content") or "")
            except (KeyError, IndexError):
                out.append("")
    return out


def _model_candidates(ctx: Any, answers: list[str], schema: dict[str, Any], tools: list) -> list[dict[str, Any]]:
    """Every candidate of every schema-valid answer, as the model wrote it, applied to the task source
    before the policy's screen (llm_check.screen) drops the ones the patcher refuses; refused ones keep
    their changes and the patcher's reason (the failure records)."""
    from services.planner.patcher import PatchRejected, apply_changes
    from services.planner.policies.base import Plan
    from services.planner.policies.llm import validate
    from services.planner.policies.llm_check import with_kernel

    out = []
    for a in answers:
        plan = validate(a, [], tools, schema)
        if not isinstance(plan, Plan):
            continue
        for cp in plan.candidates:
            changes = with_kernel(list(cp.changes), ctx.kernel)
            got = apply_changes(ctx.task.source, changes, Path(ctx.task.path).name)
            row: dict[str, Any] = {"kinds": [c.change for c in changes], "applied": not isinstance(got, PatchRejected)}
            if isinstance(got, PatchRejected):
                row["why"] = got.summary()[:300]
                row["changes"] = msgspec.to_builtins(changes)
            out.append(row)
    return out


def _patch(root: Path, ctx: Any, plan: Any) -> list[dict[str, Any]]:
    from services.planner.patcher import PatchRejected, make_candidate, sha256_text

    out = []
    start = sha256_text(ctx.task.source)
    for i, cp in enumerate(plan.candidates):
        got = make_candidate(root, ctx.task.path, ctx.task.source, cp.changes, version=i + 1)
        kinds = [c.change for c in cp.changes]
        if isinstance(got, PatchRejected):
            out.append({"kinds": kinds, "applied": False, "why": got.summary()[:300]})
        else:
            out.append({"kinds": kinds, "applied": True, "noop": got.sha256 == start, "path": got.path,
                        "config": got.config, "sha256": got.sha256,
                        "changes": msgspec.to_builtins(list(cp.changes))})
    return out


def keep_candidates(keep: Path, task_rel: str, cands: list[dict[str, Any]], stamp: dict[str, str]) -> list[dict]:
    """Copy a suite round's applied, non-no-op llm candidates into `keep` (one task file each, named by
    task and content hash) and return their index rows: what benchmarks/llm_timed.py times on a GPU."""
    keep.mkdir(parents=True, exist_ok=True)
    rows = []
    for rank, c in enumerate(cands, 1):
        if not c["applied"] or c.get("noop"):
            continue
        name = f"{Path(task_rel).stem}__{c['sha256'][:12]}.py"
        (keep / name).write_text(Path(c["path"]).read_text())
        rows.append({"task": task_rel, "candidate": name, "rank": rank, "config": c["config"],
                     "kinds": c["kinds"], "changes": c["changes"], "sha256": c["sha256"], **stamp})
    return rows


async def _funnel(task_rel: str, cand: dict[str, Any]) -> dict[str, Any]:
    from services.toolrunner.registry import local_executor
    from services.verifier.funnel import VerifyJob, verify
    from shared.ids import new_id
    from shared.toolclient import InProcessToolClient

    t0 = time.perf_counter()
    job = VerifyJob(candidate_id=new_id(), task_path=str(ROOT / task_rel), candidate_path=cand["path"])
    verdicts = await verify(job, InProcessToolClient(local_executor(), source="bench_llm"))
    passed = [v.layer for v in verdicts if v.status == "pass"]
    failed = [v for v in verdicts if v.status == "fail"]
    return {
        "layers_passed": passed,
        "failed_at": failed[0].layer if failed else None,
        "reasons": failed[0].reasons[:3] if failed else [],
        "statuses": {v.layer: v.status for v in verdicts},
        "wall_s": round(time.perf_counter() - t0, 1),
    }


def _configs(rows: list[dict[str, Any]]) -> set[str]:
    return {json.dumps(r["config"], sort_keys=True) for r in rows if r.get("applied") and not r.get("noop")}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from services.planner.policies.llm import LlmPolicy, table_transforms, tool_specs, validate
    from services.planner.policies.llm_clients import OpenAIChat
    from services.planner.policies.llm_offer import answer_schema, labels_for, offers_for
    from services.planner.policies.rules import RulesPolicy
    from tests.fixtures.llm.contexts import corpus_cases, corpus_context, task_context

    corpus = [] if args.suite_only else [("corpus", c) for c in corpus_cases()]
    suite = [("suite", f"benchmarks/tasks/{p.name}") for p in sorted((ROOT / "benchmarks/tasks").glob("l*.py"))]
    kept: list[dict[str, Any]] = []
    order: list[tuple[str, str]] = []
    for i in range(max(len(corpus), len(suite))):  # interleave: ~2 corpus cases per suite task
        order += corpus[2 * i: 2 * i + 2] + suite[i: i + 1]
    order += corpus[2 * len(suite):]
    order = order[args.skip: args.skip + args.rounds]  # --skip: go on where an earlier run stopped
    rules = RulesPolicy()
    transforms = [] if args.no_transforms else table_transforms()
    root = Path(tempfile.mkdtemp(prefix="bench_llm_"))
    rows: list[dict[str, Any]] = []
    t_start = time.monotonic()
    funnel_s = 0.0
    for kind, name in order:
        if time.monotonic() - t_start > args.max_seconds:
            break
        ctx = corpus_context(name) if kind == "corpus" else task_context(name)
        client = OpenAIChat(args.url, args.model, model_sha256=args.sha256, temperature=args.temperature,
                            max_tokens=args.max_tokens, timeout_s=args.timeout)
        policy = LlmPolicy(client, rules, tools=tool_specs(), compact=args.prompt == "compact",
                           max_retries=args.max_retries, transforms=transforms)
        offers = offers_for(ctx, policy.transforms, source_lines=policy.source_lines, exact_search=policy.compact)
        schema = answer_schema(offers, labels_for(ctx) if policy.compact else ())
        plan = await policy.propose(ctx)
        answers = _answers(client.exchanges)
        valid = [isinstance(validate(a, [], policy.tools, schema), type(plan)) for a in answers]
        rplan = await rules.propose(ctx)
        row: dict[str, Any] = {
            "kind": kind,
            "context": name,
            "kernel": ctx.kernel,
            "top_finding": ctx.findings[0].pattern if ctx.findings else None,
            "finding_kinds": list(ctx.findings[0].transformations) if ctx.findings else [],
            "llm": {
                "policy": plan.policy,
                "usage": msgspec.to_builtins(plan.llm),
                "answers": len(answers),
                "schema_valid": sum(valid),
                "refusals": [e["status"] for e in client.exchanges if e["status"] != 200],
                "analysis": plan.analysis[:300],
                "offered": sorted({o.kind if o.kind != "transform" else f"transform {o.target}" for o in offers}),
                "model_candidates": _model_candidates(ctx, answers, schema, policy.tools),
                "screened_out": list(plan.rejected),
                "candidates": _patch(root / "llm", ctx, plan) if plan.policy == "llm" else [],
            },
            "rules": {"candidates": _patch(root / "rules", ctx, rplan), "analysis": rplan.analysis[:200]},
        }
        lc, rc = _configs(row["llm"]["candidates"]), _configs(row["rules"]["candidates"])
        row["agreement"] = {"same_configs": len(lc & rc), "llm_configs": len(lc), "rules_configs": len(rc)}
        if kind == "suite" and args.keep is not None:
            kept += keep_candidates(args.keep, name, row["llm"]["candidates"], {
                "model": args.model, "model_sha256": args.sha256, "run_id": args.run_id, "commit": args.commit})
            (args.keep / "index.json").write_text(json.dumps(kept, indent=1) + "\n")
        if kind == "suite":
            for who in ("llm", "rules"):
                first = next((c for c in row[who]["candidates"] if c["applied"] and not c.get("noop")), None)
                if first is not None and funnel_s < args.funnel_budget_s:
                    first["funnel"] = await _funnel(name, first)
                    funnel_s += first["funnel"]["wall_s"]
        rows.append(row)
        if args.partial is not None:  # every finished round is kept, whatever stops the run later
            with args.partial.open("a") as f:
                f.write(json.dumps(row) + "\n")
        u = plan.llm
        print(f"{len(rows):3d} {kind:6s} {name[-40:]:40s} {plan.policy:10s} valid {sum(valid)}/{len(answers)} "
              f"tok {u.prompt_tokens}+{u.completion_tokens} {u.seconds:.1f}s", flush=True)
    return {"rows": rows, "wall_s": round(time.monotonic() - t_start, 1), "funnel_wall_s": round(funnel_s, 1)}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    answers = sum(r["llm"]["answers"] for r in rows)
    valid = sum(r["llm"]["schema_valid"] for r in rows)
    plans_llm = [r for r in rows if r["llm"]["policy"] == "llm"]

    def cand_stats(who: str) -> dict[str, Any]:
        cands = [c for r in rows for c in r[who]["candidates"]]
        funnels = [c["funnel"] for c in cands if "funnel" in c]
        return {
            "proposed": len(cands),
            "patch_failed": sum(not c["applied"] for c in cands),
            "patch_fail_rate": round(sum(not c["applied"] for c in cands) / len(cands), 4) if cands else None,
            "noop": sum(bool(c.get("noop")) for c in cands),
            "kinds": {k: sum(k in c["kinds"] for c in cands) for k in sorted({k for c in cands for k in c["kinds"]})},
            "funnel_run": len(funnels),
            "funnel_passed_static": sum("static" in f["layers_passed"] for f in funnels),
            "funnel_passed_micro": sum("micro" in f["layers_passed"] for f in funnels),
            "funnel_failed_at": {la: sum(f["failed_at"] == la for f in funnels) for la in ("static", "micro", "full")},
        }

    model = [c for r in rows for c in r["llm"]["model_candidates"]]
    model_failed = [c for c in model if not c["applied"]]
    usage = [r["llm"]["usage"] for r in rows if r["llm"]["usage"]]
    toks = [u["prompt_tokens"] + u["completion_tokens"] for u in usage if u["prompt_tokens"] is not None]
    secs = [u["seconds"] for u in usage]
    return {
        "rounds": len(rows),
        "answers": answers,
        "schema_valid": valid,
        "schema_valid_rate": round(valid / answers, 4) if answers else None,
        "plans_from_llm": len(plans_llm),
        "plans_fell_back": len(rows) - len(plans_llm),
        "fallback_reasons": sorted({r["llm"]["usage"]["fallback"][:160] for r in rows if r["llm"]["usage"]["fallback"]}),
        "constraints": sorted({u["constraint"] for u in usage}),
        "tokens_per_plan_median": statistics.median(toks) if toks else None,
        "completion_tokens_per_plan_median": statistics.median([u["completion_tokens"] for u in usage
                                                                 if u["completion_tokens"] is not None] or [0]),
        "seconds_per_plan_median": round(statistics.median(secs), 2) if secs else None,
        "seconds_per_plan_max": round(max(secs), 2) if secs else None,
        "model_candidates": len(model),
        "model_candidates_refused_by_patcher": len(model_failed),
        "model_refusal_rate": round(len(model_failed) / len(model), 4) if model else None,
        "model_refusal_reasons": sorted({c["why"].split(": ", 1)[-1][:120] for c in model_failed}),
        "llm": cand_stats("llm"),
        "rules": cand_stats("rules"),
        "same_configs_as_rules": sum(r["agreement"]["same_configs"] for r in rows),
        "llm_source_edits_where_finding_asks": sum(
            1 for r in rows if "source_edit" in r["finding_kinds"]
            and any("source_edit" in c["kinds"] for c in r["llm"]["candidates"])),
        "rounds_with_source_edit_finding": sum("source_edit" in r["finding_kinds"] for r in rows),
    }


def table(result: dict[str, Any]) -> str:
    """The run's figures as a short Markdown table (every number from `result`)."""
    s, lm, ru = result["summary"], result["summary"]["llm"], result["summary"]["rules"]

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.1f} %"

    rows = [
        ("run id / commit", f"{result['run_id']} / {result['commit'][:12]}", ""),
        ("device", result["device"], ""),
        ("model (sha256)", f"{result['model']} ({result['model_sha256'][:12]})", ""),
        ("rounds / answers", f"{s['rounds']} / {s['answers']}", str(s["rounds"])),
        ("schema-valid answers", f"{s['schema_valid']} of {s['answers']} ({pct(s['schema_valid_rate'])})", "-"),
        ("answer formats", ", ".join(s["constraints"]), "-"),
        ("plans that fell back to rules", str(s["plans_fell_back"]), "-"),
        ("candidates the model wrote", str(s["model_candidates"]), "-"),
        ("... refused by the patcher (screened out, reason kept)",
         f"{s['model_candidates_refused_by_patcher']} ({pct(s['model_refusal_rate'])})", "-"),
        ("plan candidates (after the screen)", str(lm["proposed"]), str(ru["proposed"])),
        ("patch-apply failures of plan candidates", f"{lm['patch_failed']} ({pct(lm['patch_fail_rate'])})",
         f"{ru['patch_failed']} ({pct(ru['patch_fail_rate'])})"),
        ("no-op candidates", str(lm["noop"]), str(ru["noop"])),
        ("change kinds", ", ".join(f"{k} {v}" for k, v in lm["kinds"].items()),
         ", ".join(f"{k} {v}" for k, v in ru["kinds"].items())),
        ("funnel run / passed static / passed micro",
         f"{lm['funnel_run']} / {lm['funnel_passed_static']} / {lm['funnel_passed_micro']}",
         f"{ru['funnel_run']} / {ru['funnel_passed_static']} / {ru['funnel_passed_micro']}"),
        ("tokens per plan (median, server-counted)",
         f"{s['tokens_per_plan_median']} ({s['completion_tokens_per_plan_median']} written)", "-"),
        ("seconds per plan (median / max)", f"{s['seconds_per_plan_median']} / {s['seconds_per_plan_max']}", "-"),
        ("configs the same as rules'", str(s["same_configs_as_rules"]), ""),
        ("source edit where the top finding asks for one",
         f"{s['llm_source_edits_where_finding_asks']} of {s['rounds_with_source_edit_finding']}", "-"),
    ]
    out = ["| figure | llm | rules (same contexts) |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--sha256", default="")
    ap.add_argument("--server", default="", help="what serves the model, recorded with the results")
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--skip", type=int, default=0, help="leave out the first SKIP contexts of the order")
    ap.add_argument("--max-seconds", type=float, default=600.0, help="stop starting rounds after this")
    ap.add_argument("--funnel-budget-s", type=float, default=300.0)
    ap.add_argument("--temperature", type=float, default=0.3)
    ap.add_argument("--max-tokens", type=int, default=768)
    ap.add_argument("--prompt", choices=("full", "compact"), default="compact")
    ap.add_argument("--max-retries", type=int, default=2, help="corrections per plan (the policy's default 2)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds one call may take")
    ap.add_argument("--out", type=Path, required=True, help="path stem: writes <out>.json")
    ap.add_argument("--partial", type=Path, help="append each finished round to this JSONL file")
    ap.add_argument("--no-transforms", action="store_true", help="offer no `transform` kinds (as before)")
    ap.add_argument("--run-id", default="", help="default: llm-<UTC time>")
    ap.add_argument("--device", default="", help="the machine, in words (default: platform)")
    ap.add_argument("--suite-only", action="store_true", help="only the suite tasks (the GPU-timeable contexts)")
    ap.add_argument("--keep", type=Path, help="copy the llm's suite candidates here with an index.json, "
                    "for benchmarks/llm_timed.py to time on a GPU")
    args = ap.parse_args(argv)
    args.run_id = args.run_id or time.strftime("llm-%Y%m%dT%H%M%SZ", time.gmtime())
    import subprocess

    # Read before the run: the code that runs is the code imported at its start (a commit made while a
    # run lasts must not be recorded as the one that ran).
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=False).stdout.strip()
    args.commit = commit
    got = asyncio.run(run(args))
    result = {
        "what": "llm policy vs rules on the planted corpus and the suite tasks (benchmarks/bench_llm.py)",
        "run_id": args.run_id,
        "device": args.device or f"{platform.machine()} {platform.node()}, {os.cpu_count()} CPUs, CPU only",
        "transforms_offered": not args.no_transforms,
        "skipped_contexts": args.skip,
        "server": args.server, "model": args.model, "model_sha256": args.sha256,
        "temperature": args.temperature, "max_tokens": args.max_tokens, "prompt": args.prompt, "max_retries": args.max_retries,
        "machine": f"{platform.machine()} {platform.node()}, CPU only (no GPU: nothing timed)",
        "python": platform.python_version(), "commit": commit,
        "wall_s": got["wall_s"], "funnel_wall_s": got["funnel_wall_s"],
        "summary": summarize(got["rows"]),
        "rows": got["rows"],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(table(result))
    print(json.dumps(result["summary"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
