"""Where the verifier's funnel spends its time: every tool call and every sandboxed worker spawn, by layer.

Runs the real funnel (services/verifier/funnel.py) on honest config changes of one task through the
in-process tool client bench_verifier.py uses (every tool in its sandboxed workers, no NATS), with the
compile and ptxas caches in a fresh directory, so the first candidate is cold and the next ones see a
warm parent (the case of a planner job: one parent, many candidates). `run_worker` is wrapped in every
module that imported it to record each spawn's worker module, tool, duration and, for the correctness and
honesty workers, its side (candidate or reference) and how many cases or seeds it ran. Prints a table per
candidate and writes JSON to --out. Works on CPU (the timing layers say "not measured: no GPU").

    .venv/bin/python benchmarks/profile_funnel.py --task vector_add --out /tmp/profile_funnel.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Honest config changes per task: the first as in bench_verifier.py, then other configs of the same
# parent, as a planner job proposes them.
CONFIGS = {
    "vector_add": [{"BLOCK": 1024, "num_warps": 4}, {"BLOCK": 512, "num_warps": 4}],
    "row_softmax": [{"BLOCK_N": 1024, "num_warps": 8}, {"BLOCK_N": 1024, "num_warps": 4}],
    "matmul": [
        {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
        {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 2},
    ],
}
LAYER_OF = {
    "load_task": "static",
    "compile": "static",
    "ptxas_info": "static",
    "sass": "static",
    "run_correctness": "micro",
    "honesty_probe": "micro",
    "bench": "micro",
    "bench_ab": "full",
}
TOOL: contextvars.ContextVar[str] = contextvars.ContextVar("tool", default="(outside a tool)")


class Recorder:
    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.lock = threading.Lock()
        self.calls: list[dict[str, Any]] = []
        self.spawns: list[dict[str, Any]] = []

    def wrap_run_worker(self) -> None:
        from services.toolrunner import sandbox

        original = sandbox.run_worker

        def recorded(module: str, request: bytes, *a: Any, **kw: Any) -> Any:
            start = time.perf_counter()
            out = original(module, request, *a, **kw)
            try:  # correctness and honesty workers name their side and the cases or seeds they run
                req = json.loads(request)
            except ValueError:
                req = {}
            req = req if isinstance(req, dict) else {}
            with self.lock:
                self.spawns.append(
                    {
                        "tool": TOOL.get(),
                        # tools.<name>.worker -> <name>; worker_lib.load_task -> load_task
                        "worker": module.removesuffix(".worker").rsplit(".", 1)[-1],
                        "role": req.get("role", ""),
                        "cases": len(req.get("cases") or req.get("seeds") or []),
                        "start_s": round(start - self.t0, 3),
                        "duration_s": round(time.perf_counter() - start, 3),
                        "status": out.status,
                    }
                )
            return out

        # Tools import run_worker by name; import them all (the catalog), then patch every binding.
        from services.toolrunner.catalog import load_specs

        load_specs()
        for mod in list(sys.modules.values()):
            if getattr(mod, "run_worker", None) is original:
                mod.run_worker = recorded  # type: ignore[attr-defined]


class ProfilingClient:
    def __init__(self, inner: Any, rec: Recorder) -> None:
        self.inner, self.rec = inner, rec

    async def call(self, tool: str, args: dict[str, Any], *, job_id: str | None = None,
                   causation_id: str | None = None) -> Any:
        TOOL.set(tool)  # this call's task context; asyncio.to_thread carries it into the worker thread
        start = time.perf_counter()
        res = await self.inner.call(tool, args, job_id=job_id, causation_id=causation_id)
        self.rec.calls.append(
            {
                "tool": tool,
                "start_s": round(start - self.rec.t0, 3),
                "duration_s": round(time.perf_counter() - start, 3),
                "ok": res.ok,
                "error": res.error.code if res.error else None,
                "args": {k: v for k, v in args.items() if k in ("task_path", "candidate_path", "disassembler")},
            }
        )
        return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="vector_add", choices=sorted(CONFIGS))
    ap.add_argument("--candidates", type=int, default=2, help="honest candidates verified in a row")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    from services.toolrunner.registry import local_executor
    from services.toolrunner.tools.compile import spec as compile_tool
    from services.toolrunner.tools.ptxas_info import spec as ptxas_info
    from services.verifier.funnel import VerifyJob, verify
    from shared.toolclient import InProcessToolClient

    cache_root = Path(tempfile.mkdtemp(prefix="kpilot-profile-"))
    ptxas_info.configure(cache_root, compile_tool.configure(cache_root))
    rec = Recorder()
    rec.wrap_run_worker()
    client = ProfilingClient(InProcessToolClient(local_executor(), source="profile_funnel"), rec)
    configs = (CONFIGS[args.task] * args.candidates)[: args.candidates]
    report = []
    for i, config in enumerate(configs):
        n_calls, n_spawns = len(rec.calls), len(rec.spawns)
        job = VerifyJob(
            candidate_id=f"{args.task}:{i}", task_path=str(ROOT / "examples" / f"{args.task}.py"), config=config
        )
        t0 = time.perf_counter()
        verdicts = asyncio.run(verify(job, client))
        wall = time.perf_counter() - t0
        calls, spawns = rec.calls[n_calls:], rec.spawns[n_spawns:]
        layers = {}
        for v in verdicts:
            mine = [s for s in spawns if LAYER_OF.get(s["tool"]) == v.layer]
            layers[v.layer] = {
                "status": v.status,
                "wall_s": v.wall_s,
                "spawns": len(mine),
                "spawn_s": round(sum(s["duration_s"] for s in mine), 3),
                "tool_calls": sum(LAYER_OF.get(c["tool"]) == v.layer for c in calls),
                "spawns_by_worker": dict(Counter(f"{s['tool']}/{s['worker']}" for s in mine)),
                "reference_spawns": sum(s["role"] == "reference" for s in mine),
                "reference_spawn_s": round(sum(s["duration_s"] for s in mine if s["role"] == "reference"), 3),
            }
        report.append(
            {"candidate": i, "config": config, "wall_s": round(wall, 3), "layers": layers, "calls": calls,
             "spawns": spawns}
        )
        print(f"\n== candidate {i} {config}: {wall:.1f} s", file=sys.stderr)
        for c in calls:
            print(f"  call  {c['start_s']:7.2f} {c['duration_s']:6.2f}s {c['tool']:<16} "
                  f"{'ok' if c['ok'] else c['error']:<12} {c['args']}", file=sys.stderr)
        for s in spawns:
            side = f"{s['role']} x{s['cases']}" if s["role"] else ""
            print(f"  spawn {s['start_s']:7.2f} {s['duration_s']:6.2f}s {s['tool']:<16} {s['worker']:<14} "
                  f"{side:<14} {s['status']}", file=sys.stderr)
        for name, lay in layers.items():
            print(f"  {name:<6} {lay['status']:<8} wall {lay['wall_s']:6.2f}s  {lay['tool_calls']} calls  "
                  f"{lay['spawns']} spawns ({lay['spawn_s']:.2f}s, {lay['reference_spawns']} of the reference: "
                  f"{lay['reference_spawn_s']:.2f}s)  {lay['spawns_by_worker']}", file=sys.stderr)
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
