"""The kernel benchmark suite's task list and the parts the tool loader does not read. Pure, no task code.

Tasks live in benchmarks/tasks/l<level>_*.py (the format of examples/README.md). Three extra parts, ignored
by `load_task`, are read here from the file's literals with `ast` (never by importing it):
  LEVEL = "L1".."L4"                     the suite level (L1 no tensor cores ... L4 irregular work)
  BASELINES = {"eager": eager, ...}      library callables baselines.py times (the keys are read here)
  TARGET = {"against": X, "at_least": r} what the row is held against: X is "roofline" (achieved fraction
                                         of the roofline bound >= r) or a baseline name ("eager",
                                         "compile", "sdpa", "matmul": speedup over it >= r)
"""

from __future__ import annotations

import ast
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
TASKS_DIR = ROOT / "benchmarks" / "tasks"
LEVELS = ("L1", "L2", "L3", "L4")
# baselines.py times these (compile = torch.compile(mode="max-autotune") of the task's `eager`).
BASELINE_NAMES = ("eager", "compile", "sdpa", "matmul")
TARGET_KINDS = ("roofline",) + BASELINE_NAMES


class Target(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    against: str
    at_least: float

    def describe(self) -> str:
        if self.against == "roofline":
            return f">= {self.at_least:g} of the roofline bound"
        return f">= {self.at_least:g}x {self.against}"


class TaskMeta(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str  # the file stem
    path: str
    level: str
    kind: str  # "triton" or "cuda" (CUDA_SOURCE present)
    baselines: list[str]  # BASELINES keys, plus "compile" whenever "eager" is there
    target: Target


class SuiteError(ValueError):
    pass


def _assignments(tree: ast.Module) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
    return out


def read_meta(path: Path) -> TaskMeta:
    """LEVEL, BASELINES keys and TARGET of one task file, checked; SuiteError names what is wrong."""
    tree = ast.parse(path.read_text(), filename=str(path))
    parts = _assignments(tree)
    problems = []
    level = parts.get("LEVEL")
    level_v = ast.literal_eval(level) if level is not None else None
    if level_v not in LEVELS:
        problems.append(f'LEVEL: want one of {list(LEVELS)}, e.g. LEVEL = "L1"; got {level_v!r}')
    bl = parts.get("BASELINES")
    keys: list[str] = []
    if not isinstance(bl, ast.Dict) or not all(isinstance(k, ast.Constant) for k in bl.keys):
        problems.append('BASELINES: want a dict literal of name -> function, e.g. {"eager": eager}')
    else:
        keys = [str(k.value) for k in bl.keys if isinstance(k, ast.Constant)]
        if bad := [k for k in keys if k not in BASELINE_NAMES or k == "compile"]:
            problems.append(f"BASELINES: unknown keys {bad}; use eager, sdpa, matmul (compile is derived)")
        if "eager" not in keys:
            problems.append('BASELINES: needs "eager" (the idiomatic torch version at the task dtype)')
    tg = parts.get("TARGET")
    target = None
    try:
        target = msgspec.convert(ast.literal_eval(tg) if tg is not None else None, Target)
    except (ValueError, msgspec.ValidationError) as e:
        problems.append(f'TARGET: want {{"against": "roofline"|baseline, "at_least": number}}: {e}')
    if target is not None and target.against not in TARGET_KINDS:
        problems.append(f"TARGET: against {target.against!r} is not one of {list(TARGET_KINDS)}")
    if target is not None and target.against != "roofline" and target.against not in keys + ["compile"]:
        problems.append(f"TARGET: against {target.against!r} but BASELINES has no such entry")
    if problems or target is None:
        raise SuiteError(f"{path.name}: " + "; ".join(problems))
    kind = "cuda" if "CUDA_SOURCE" in parts else "triton"
    baselines = keys[:1] + ["compile"] + keys[1:] if "eager" in keys else keys
    return TaskMeta(
        name=path.stem, path=str(path), level=str(level_v), kind=kind, baselines=baselines, target=target
    )


def all_tasks(tasks_dir: Path = TASKS_DIR) -> list[Path]:
    """The suite's task files, level by level (l1_*.py ... l4_*.py), alphabetical within a level."""
    return sorted(tasks_dir.glob("l[1-4]_*.py"))


def select(names: str | None, tasks_dir: Path = TASKS_DIR) -> list[TaskMeta]:
    """`--tasks a,b` (file stems) or every task; an unknown name is refused with the known ones."""
    known = {p.stem: p for p in all_tasks(tasks_dir)}
    if not names:
        return [read_meta(p) for p in known.values()]
    wanted = [n.strip().removesuffix(".py") for n in names.split(",") if n.strip()]
    if unknown := [n for n in wanted if n not in known]:
        raise SuiteError(f"unknown tasks {unknown}; known: {', '.join(known)}")
    return [read_meta(known[n]) for n in wanted]
