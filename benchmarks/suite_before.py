"""The recorded 'before' row of a suite task: what `benchmarks/run_suite.py` measured on the H200 with the
author-written variant switches (USE_TILE, SPLIT_M, PAD_ALIGN, SPLIT_MASK, SKIP, ...), read from
`benchmarks/results/h200/suite/kernels.json`, with the run it came from and its baseline ratios recomputed
from the recorded times. Pure: reads committed JSON, measures nothing.

Which run wrote a row: kernels.json rows carry no run id (issue 19), so it is derived from the file's own
record: the last suite command (`earlier_commands` then `command`) whose `--tasks` names the task wrote the
row (`--append` replaces a row only when its task is measured again), and that command's `--baselines`
file names the run. Where that baselines file is committed beside kernels.json, the row's eager (or sdpa /
matmul) time must equal the file's, else the derivation is refused as unconfirmed. Each baseline time is
marked with the committed file that holds it (torch.compile was merged from other runs).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SUITE_DIR = ROOT / "benchmarks" / "results" / "h200" / "suite"
KERNELS_JSON = SUITE_DIR / "kernels.json"
# Baselines files of the runs before numbered names (benchmarks/results/h200/suite/README.md: runs 4 and 5).
_UNNUMBERED = {"baselines_smoke": "run4", "baselines_l1l2": "run4", "baselines_l3l4": "run5"}
_RUN = re.compile(r"baselines_(run\d+)")


class BeforeError(ValueError):
    """kernels.json cannot give the task's recorded row; the message names the fix."""


def _arg(argv: list[str], flag: str) -> str | None:
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def run_of_baselines(name: str) -> str:
    """'run19' from baselines_run19_suite.json; the README's names for runs 4-5; else 'not known'."""
    stem = Path(name).stem
    if stem in _UNNUMBERED:
        return _UNNUMBERED[stem]
    m = _RUN.match(stem)
    return m.group(1) if m else f"not known: {name} names no run"


def _baseline_time(doc: dict[str, Any], task: str, kind: str) -> float | None:
    for t in doc.get("tasks", []):
        if t.get("task") == task:
            return ((t.get("baselines") or {}).get(kind) or {}).get("median_ms")
    return None


def _files(suite_dir: Path) -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in sorted(suite_dir.glob("baselines_*.json"))}


def provenance(doc: dict[str, Any], task: str, row: dict[str, Any], suite_dir: Path) -> dict[str, Any]:
    """The run that wrote `row` (see the module doc) and, per baseline, the committed file holding it."""
    commands = [*doc.get("earlier_commands", []), doc.get("command", "")]
    writer = None
    for cmd in commands:
        argv = shlex.split(cmd)
        if task in (_arg(argv, "--tasks") or "").split(","):
            writer = argv
    files = _files(suite_dir)
    out: dict[str, Any] = {"run": "not known: no recorded command names the task", "how": ""}
    if writer is not None:
        bfile = Path(_arg(writer, "--baselines") or "").name
        out["run"] = run_of_baselines(bfile) if bfile else "not known: its command had no --baselines"
        out["command"] = shlex.join(writer)
        same_session = [k for k in ("eager", "sdpa", "matmul") if row.get("baselines_ms", {}).get(k) is not None]
        if bfile in files:
            held = {k: _baseline_time(files[bfile], task, k) for k in same_session}
            if any(held[k] != row["baselines_ms"][k] for k in same_session):
                raise BeforeError(f"{task}: kernels.json's row does not match {bfile}, the baselines of the "
                                  f"last command naming it ({held} vs {row['baselines_ms']}); the row's run "
                                  "cannot be derived: fix kernels.json's command record")
            out["how"] = (f"last recorded suite command naming the task; its baselines file {bfile} holds the "
                          f"row's {', '.join(same_session) or 'no'} times (checked)")
        else:
            out["how"] = (f"last recorded suite command naming the task; its baselines file {bfile} is not "
                          "committed, so the row's times were not checked against it")
    where: dict[str, str] = {}
    for kind, ms in (row.get("baselines_ms") or {}).items():
        hits = [n for n, f in files.items() if ms is not None and _baseline_time(f, task, kind) == ms]
        where[kind] = (", ".join(f"{run_of_baselines(h)} ({h})" for h in hits) if hits else
                       "not known: no committed baselines file holds this time" if ms is not None else "not measured")
    out["baselines_from"] = where
    return out


def ratios(baselines_ms: dict[str, float | None], after_ms: float | None,
           roofline_bound_ms: float | None) -> dict[str, float | str]:
    """Baseline median / our median per baseline (> 1: ours is faster) and the copy-bandwidth fraction
    (roofline bound / our median), recomputed; "not measured: ..." where a time is missing."""
    out: dict[str, float | str] = {}
    for kind, ms in sorted(baselines_ms.items()):
        out[kind] = (ms / after_ms if ms is not None and after_ms else
                     "not measured: " + ("no baseline time" if ms is None else "no kernel time"))
    out["copy_bandwidth"] = (roofline_bound_ms / after_ms if roofline_bound_ms and after_ms else
                             "not measured: " + ("no roofline bound" if not roofline_bound_ms else "no kernel time"))
    return out


def switches(best_config: dict[str, Any] | None, knobs: set[str] | None) -> dict[str, Any]:
    """The recorded best config's knobs the task no longer has: the removed author-written switches
    (USE_TILE, SPLIT_M, PAD_ALIGN, ...) with the value the switch-era search chose."""
    if not best_config or knobs is None:
        return {}
    return {k: v for k, v in best_config.items() if k not in knobs}


def before_row(task: str, kernels_json: Path = KERNELS_JSON, knobs: set[str] | None = None) -> dict[str, Any]:
    """The recorded switch-era row of `task`, trimmed to what the comparison needs, with provenance.
    `knobs`: the task's CONFIG keys now, to name the removed switches in the recorded best config."""
    try:
        doc = json.loads(kernels_json.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise BeforeError(f"cannot read {kernels_json} ({e}); pass --kernels-json with the suite's rows") from e
    rows = [r for r in doc.get("rows", []) if r.get("task") == task]
    if not rows:
        return {"recorded": False, "why": f"{kernels_json.name} has no row for {task}"}
    row = rows[-1]
    after = (row.get("after") or {}).get("median_ms")
    return {
        "recorded": True,
        "source": str(kernels_json.relative_to(ROOT) if kernels_json.is_relative_to(ROOT) else kernels_json),
        "provenance": provenance(doc, task, row, kernels_json.parent),
        "device": row.get("device"), "driver": row.get("driver"),
        "start_config": row.get("start_config"), "best_config": row.get("best_config"),
        "switches": switches(row.get("best_config"), knobs),
        "before_ms": (row.get("before") or {}).get("median_ms"), "after_ms": after,
        "speedup": row.get("speedup"), "speedup_ci": row.get("speedup_ci"), "outcome": row.get("outcome"),
        "wall_s_to_best": row.get("wall_s_to_best"), "gpu_s": row.get("gpu_s"),
        "baselines_ms": row.get("baselines_ms") or {},
        "roofline_bound_ms": row.get("roofline_bound_ms"),
        "ratios": ratios(row.get("baselines_ms") or {}, after, row.get("roofline_bound_ms")),
    }
