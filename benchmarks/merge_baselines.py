"""Fill library baselines measured in another GPU session into an existing suite report, without a re-run.

The committed H200 suite (benchmarks/results/h200/suite/kernels.json) was measured with --skip-compile;
H200 runs 17-19 timed torch.compile(max-autotune) on their own (the same shapes), and this script put
those figures into the rows: baselines_ms, speedup_vs (baseline median / the row's own after.median_ms),
meets_target (run_suite.meets) and the notes (what is still missing, where the figure came from,
torch.compile's first-call seconds). A baseline that failed in FILE is noted as not
measured. Rows of tasks absent from FILE are left as they are; merging the same file again changes nothing.

    .venv/bin/python benchmarks/merge_baselines.py --suite benchmarks/results/h200/suite/kernels.json \\
        --baselines benchmarks/results/h200/suite/baselines_run17.json [--names compile] [--tasks T,...] \\
        [--out-md PATH]

The JSON is rewritten in place (run_suite.write's formatting) and the Markdown regenerated next to it
(same stem, .md) unless --out-md says where. Nothing is written when any check fails.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import run_suite
from benchmarks.baselines_worker import BaselineTiming
from benchmarks.suite import BASELINE_NAMES, SuiteError, TaskMeta, select

MISSING_PREFIX = "baselines not measured: "
# Errors in FILE are already cut to 300 characters by baselines_worker; the note keeps them on one line.
MAX_ERROR_CHARS = 300


class MergeError(ValueError):
    """A refusal; the message names the fix. Nothing has been written when it is raised."""


class TaskBaselines(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task: str
    baselines: dict[str, BaselineTiming] = {}
    not_measured: str = ""  # the whole task failed or was not started (baselines.py)


class BaselinesFile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """benchmarks/baselines.py's output."""

    roofline: dict[str, Any] = {}
    tasks: list[TaskBaselines]
    provenance: dict[str, Any] = {}  # empty when the session's roofline failed (baselines.py)
    wall_s: float | None = None


def load_suite(path: Path) -> run_suite.Report:
    if not path.is_file():
        raise MergeError(f"--suite {path}: no such file; pass the run_suite.py report (kernels.json)")
    try:
        report = msgspec.json.decode(path.read_bytes(), type=run_suite.Report)
    except msgspec.DecodeError as e:
        raise MergeError(
            f"--suite {path}: not a run_suite.py report ({e}); pass the kernels.json that run_suite.py wrote"
        ) from e
    if report.dry_run:
        raise MergeError(
            f"--suite {path}: a --dry-run report has no kernel times to compare baselines with; "
            "pass a report of a GPU run"
        )
    return report


def load_baselines(path: Path) -> BaselinesFile:
    if not path.is_file():
        raise MergeError(
            f"--baselines {path}: no such file; pass the JSON that benchmarks/baselines.py wrote"
        )
    try:
        return msgspec.json.decode(path.read_bytes(), type=BaselinesFile)
    except msgspec.DecodeError as e:
        raise MergeError(
            f"--baselines {path}: not a benchmarks/baselines.py output ({e}); "
            "pass the JSON that benchmarks/baselines.py --out wrote"
        ) from e


def only_tasks(data: BaselinesFile, tasks: Sequence[str], source: str) -> BaselinesFile:
    """FILE cut to `tasks` (--tasks), e.g. to take one level's figures from a file whose other entries only
    say that its session never reached them. MergeError when a name is not in FILE."""
    if not tasks:
        raise MergeError("--tasks is empty; pass task names, e.g. --tasks l3_attention_d64")
    in_file = [t.task for t in data.tasks]
    if missing := [t for t in tasks if t not in in_file]:
        raise MergeError(
            f"--tasks {missing}: not in {source} (it has {', '.join(in_file) or 'no task'}); "
            "pass only tasks the file measured or tried"
        )
    return msgspec.structs.replace(data, tasks=[t for t in data.tasks if t.task in tasks])


def _one_line(text: str) -> str:
    return " ".join(text.split())[:MAX_ERROR_CHARS]


def _provenance_note(name: str, timing: BaselineTiming, source: str, prov: dict[str, Any], row: Any) -> str:
    note = (
        f"{name} baseline from {source} (measured in another session than this row's kernel times; "
        "same device model)"
    )
    if timing.compile_s is not None:
        note += f"; torch.compile first call {timing.compile_s:.1f} s"
    if prov.get("torch") and prov["torch"] != row.torch:  # torch.compile's output depends on torch
        note += f"; torch {prov['torch']} there, {row.torch} for the kernel times"
    return note


def _check(
    report: run_suite.Report, data: BaselinesFile, names: Sequence[str], source: str
) -> dict[str, TaskMeta]:
    """Every refusal before anything changes; returns the metas of the rows that FILE touches."""
    if not names:
        raise MergeError("--names is empty; pass baseline names, e.g. --names compile")
    if unknown := [n for n in names if n not in BASELINE_NAMES]:
        raise MergeError(f"--names {unknown}: not baseline names; use some of {', '.join(BASELINE_NAMES)}")
    in_file = {t.task for t in data.tasks}
    rows = [r for r in report.rows if r.task in in_file]
    device = data.provenance.get("device")
    measured_on = sorted({r.device for r in rows if r.device and r.device != run_suite.NO_GPU})
    if measured_on and not device:
        raise MergeError(
            f"--baselines {source}: its provenance names no device (that session's roofline was not "
            f"measured), so it cannot be checked against rows measured on {measured_on[0]!r}; "
            "pass a baselines.py file whose provenance has a device"
        )
    if other := [d for d in measured_on if d != device]:
        raise MergeError(
            f"baselines from {device!r} cannot be merged into rows measured on {other[0]!r}; "
            "pass a baselines file measured on the same device model as the suite"
        )
    metas: dict[str, TaskMeta] = {}
    for row in rows:
        try:
            meta = select(row.task)[0]
        except SuiteError as e:
            raise MergeError(f"row {row.task}: {e}; its task file is needed to judge the target") from e
        if bad := [n for n in names if n not in meta.baselines]:
            raise MergeError(
                f"--names {bad}: not a baseline of {row.task} (its baselines: {', '.join(meta.baselines)}); "
                "pass only names the task times"
            )
        if row.target != meta.target.describe():
            raise MergeError(
                f"row {row.task}: its target {row.target!r} is not the task file's "
                f"{meta.target.describe()!r}; meets_target would be judged against a target the row does not "
                "state: re-run the task or restore its TARGET"
            )
        metas[row.task] = meta
    return metas


def merge(
    report: run_suite.Report, data: BaselinesFile, names: Sequence[str], source: str
) -> tuple[run_suite.Report, list[str]]:
    """The report with FILE's `names` baselines in the rows of its tasks (the rows are changed in place),
    and one line per row saying what was done. MergeError (nothing changed) when a check fails."""
    metas = _check(report, data, names, source)
    by_task = {t.task: t for t in data.tasks}
    said: list[str] = []
    for row in report.rows:
        entry = by_task.get(row.task)
        if entry is None:
            continue
        done: list[str] = []
        for name in names:
            timing = entry.baselines.get(name)
            if timing is None and not entry.not_measured:
                continue  # FILE did not try it (e.g. baselines.py --skip-compile): nothing to say
            failed_prefix = f"{name}: not measured: "
            if timing is None or timing.median_ms is None:
                # A failure never replaces a figure merged earlier from another file: it is only noted,
                # next to other files' failures (run 19's timeout stays when run 21 never reached the task).
                row.notes = [
                    n for n in row.notes if not (n.startswith(failed_prefix) and n.endswith(f"({source})"))
                ]
                why = timing.error if timing is not None and timing.error else entry.not_measured
                row.notes.append(f"{failed_prefix}{_one_line(why or 'no time recorded')} ({source})")
                row.baselines_ms.setdefault(name, None)
                done.append(f"{name} not measured")
                continue
            from_prefix = f"{name} baseline from "
            row.notes = [n for n in row.notes if not n.startswith((from_prefix, failed_prefix))]
            row.baselines_ms[name] = timing.median_ms
            row.notes.append(_provenance_note(name, timing, source, data.provenance, row))
            done.append(f"{name} {timing.median_ms:.4f} ms")
        if not done:
            continue
        after_ms = row.after.median_ms if row.after is not None else None
        row.speedup_vs = {
            n: (ms / after_ms if ms and after_ms else None) for n, ms in row.baselines_ms.items()
        }
        row.meets_target = run_suite.meets(metas[row.task], row.roofline_fraction, row.speedup_vs)
        _rewrite_missing(row)
        said.append(f"{row.task}: {', '.join(done)}; meets_target {row.meets_target}")
    return report, said


def _rewrite_missing(row: Any) -> None:
    """The "baselines not measured: ..." note lists what is still None, in place; dropped when nothing is."""
    missing = [n for n, ms in row.baselines_ms.items() if ms is None]
    text = MISSING_PREFIX + ", ".join(missing)
    at = next((i for i, n in enumerate(row.notes) if n.startswith(MISSING_PREFIX)), None)
    notes = [n for n in row.notes if not n.startswith(MISSING_PREFIX)]
    if missing:
        notes.insert(len(notes) if at is None else at, text)
    row.notes = notes


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", type=Path, required=True, help="run_suite.py's kernels.json (rewritten)")
    ap.add_argument("--baselines", type=Path, required=True, help="baselines.py's JSON of another session")
    ap.add_argument("--names", default="compile", help="comma-separated baselines to take (default compile)")
    ap.add_argument("--out-md", type=Path, default=None, help="the Markdown table (default: --suite's .md)")
    ap.add_argument(
        "--tasks", default=None, help="comma-separated tasks to take from FILE (default: every task in it)"
    )
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.names.split(",") if n.strip()]
    try:
        report = load_suite(args.suite)
        data = load_baselines(args.baselines)
        if args.tasks is not None:
            data = only_tasks(
                data, [t.strip() for t in args.tasks.split(",") if t.strip()], args.baselines.name
            )
        report, said = merge(report, data, names, args.baselines.name)
    except MergeError as e:
        print(f"merge_baselines: error: {e}", file=sys.stderr)
        return 2
    if not said:
        print(
            f"merge_baselines: nothing merged, nothing written: {args.baselines.name} times no "
            f"{', '.join(names)} baseline of a task in {args.suite.name}; pass a baselines.py file measured "
            "without --skip-compile (or other --names)",
            file=sys.stderr,
        )
        return 1
    out_md = args.out_md or args.suite.with_suffix(".md")
    run_suite.write(report, args.suite, out_md)
    for line in said:
        print(line, file=sys.stderr)
    print(f"wrote {args.suite} and {out_md}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
