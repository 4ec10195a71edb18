"""GPU runs as a ledger: one declarative run file per device run, one runner, every result stamped.

A run file (`benchmarks/runs/<id>.toml`) says what to run and with which budgets:

    id = "r28"                      # the run id every result of the run carries
    purpose = "why this run exists"
    budget_s = 540                  # the whole run; a step that would start past it is skipped, said so
    [[step]]
    name = "side_stream"            # letters, digits, '_' and '-'
    cmd = "python3 benchmarks/x.py --out $STEP_OUT/x.json"
    timeout_s = 120

`python3 benchmarks/ledger.py run RUNFILE --out DIR --commit SHA` runs on the device (stdlib only: the
device's python lacks the project's packages until the carried wheels in `.whl/` are installed, which the
runner does first). Each step gets `STEP_OUT` (its own folder), `KPILOT_RUN_ID`, `KPILOT_RUN_COMMIT` and
`KPILOT_RUN_STEP` in its environment; scripts stamp their rows with `run_stamp()`. The runner writes
`DIR/ledger.json` (the stamp: run id, commit, device, driver, CUDA, torch, Triton; each step's exit code,
seconds and output tail) and packs every step's folder into `DIR/results.tar.gz` (the device tool brings
back at most 8 files).

`python3 benchmarks/ledger.py record FETCHED_DIR` unpacks a fetched run into
`benchmarks/results/runs/<id>/` beside its ledger.json: results are never edited by hand after that.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "runs"
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_TAIL = 4000


class RunFileError(ValueError):
    """A run file that cannot be run; the message names the field and the fix."""


@dataclass(frozen=True)
class Step:
    name: str
    cmd: str
    timeout_s: int


@dataclass(frozen=True)
class RunFile:
    id: str
    purpose: str
    budget_s: int
    steps: tuple[Step, ...]


def load_run_file(path: Path) -> RunFile:
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise RunFileError(f"{path}: cannot read the run file ({e}); it must be TOML (see ledger.py)") from e
    unknown = set(doc) - {"id", "purpose", "budget_s", "step"}
    if unknown:
        raise RunFileError(f"{path}: unknown keys {sorted(unknown)}; allowed: id, purpose, budget_s, [[step]]")
    run_id = doc.get("id")
    if not isinstance(run_id, str) or not _NAME.match(run_id):
        raise RunFileError(f"{path}: `id` must be a name of letters, digits, '_' or '-' (e.g. id = \"r28\")")
    budget = doc.get("budget_s")
    if not isinstance(budget, int) or budget <= 0:
        raise RunFileError(f"{path}: `budget_s` must be a positive integer of seconds (e.g. budget_s = 540)")
    raw_steps = doc.get("step") or []
    if not raw_steps:
        raise RunFileError(f"{path}: no [[step]] tables; add at least one with name, cmd and timeout_s")
    steps = []
    for i, s in enumerate(raw_steps):
        extra = set(s) - {"name", "cmd", "timeout_s"}
        if extra:
            raise RunFileError(f"{path}: step {i} has unknown keys {sorted(extra)}; allowed: name, cmd, timeout_s")
        name, cmd, timeout = s.get("name"), s.get("cmd"), s.get("timeout_s")
        if not isinstance(name, str) or not _NAME.match(name):
            raise RunFileError(f"{path}: step {i} needs `name` of letters, digits, '_' or '-'")
        if not isinstance(cmd, str) or not cmd.strip():
            raise RunFileError(f"{path}: step {name!r} needs a non-empty `cmd`")
        if not isinstance(timeout, int) or timeout <= 0:
            raise RunFileError(f"{path}: step {name!r} needs `timeout_s`, a positive integer of seconds")
        steps.append(Step(name=name, cmd=cmd, timeout_s=timeout))
    if len({s.name for s in steps}) != len(steps):
        raise RunFileError(f"{path}: step names must be unique")
    return RunFile(id=run_id, purpose=str(doc.get("purpose", "")), budget_s=budget, steps=tuple(steps))


@dataclass
class StepResult:
    name: str
    status: str  # "ok", "failed", "timeout", "skipped: <why>"
    returncode: int | None
    seconds: float
    output_tail: str = ""


@dataclass
class Ledger:
    run_id: str
    purpose: str
    commit: str
    started: str
    env: dict[str, str] = field(default_factory=dict)
    steps: list[StepResult] = field(default_factory=list)


def _probe_env() -> dict[str, str]:
    """Device, driver and versions, each "not known: why" when it cannot be read (never guessed)."""
    env: dict[str, str] = {}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=False).stdout.strip()
        name, _, driver = out.partition(",")
        env["device"], env["driver"] = name.strip() or "none", driver.strip() or "not known"
    except (OSError, subprocess.TimeoutExpired) as e:
        env["device"], env["driver"] = "none", f"not known: {e}"
    code = ("import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    parts = out.stdout.split()
    if len(parts) == 3:
        env["torch"], env["cuda"], env["triton"] = parts
    else:
        env["torch"] = env["cuda"] = env["triton"] = f"not known: {out.stderr.strip()[-200:]}"
    env["python"] = sys.version.split()[0]
    return env


def _install_wheels(root: Path, site: Path) -> str:
    wheels = sorted(str(p) for p in (root / ".whl").glob("*.whl"))
    if not wheels:
        return "no .whl/ carried"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                           "--no-cache-dir", "--upgrade", "--target", str(site), *wheels],
                          capture_output=True, text=True, check=False)
    return "installed" if proc.returncode == 0 else f"failed: {proc.stderr.strip()[-400:]}"


def run(run_file: RunFile, out: Path, commit: str, *, root: Path = ROOT) -> Ledger:
    out.mkdir(parents=True, exist_ok=True)
    site = Path("/tmp/site")  # where the device scripts look for the carried packages
    ledger = Ledger(run_id=run_file.id, purpose=run_file.purpose, commit=commit,
                    started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    ledger.env["wheels"] = _install_wheels(root, site)
    base_env = dict(os.environ)
    base_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), str(root), base_env.get("PYTHONPATH")) if p)
    base_env["PATH"] = f"{site / 'bin'}{os.pathsep}{base_env.get('PATH', '')}"
    base_env.update({"PYTHONUNBUFFERED": "1", "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                     "KPILOT_RUN_ID": run_file.id, "KPILOT_RUN_COMMIT": commit,
                     "KPILOT_COMMIT": commit})  # the name the bench scripts read when there is no .git
    ledger.env.update(_probe_env())
    base_env.update({"KPILOT_RUN_DEVICE": ledger.env["device"], "KPILOT_RUN_DRIVER": ledger.env["driver"]})
    steps_dir = out / "steps"
    start = time.monotonic()
    for step in run_file.steps:
        left = run_file.budget_s - (time.monotonic() - start)
        if left < min(step.timeout_s, 30):
            ledger.steps.append(StepResult(step.name, f"skipped: {left:.0f} s of the run's budget left",
                                           None, 0.0))
            continue
        step_out = steps_dir / step.name
        step_out.mkdir(parents=True, exist_ok=True)
        env = dict(base_env, STEP_OUT=str(step_out), KPILOT_RUN_STEP=step.name)
        t0 = time.monotonic()
        try:
            proc = subprocess.run(["bash", "-c", step.cmd], cwd=root, env=env, capture_output=True, text=True,
                                  timeout=min(step.timeout_s, left), check=False)
            status = "ok" if proc.returncode == 0 else "failed"
            rc, text = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as e:
            status, rc = "timeout", None
            text = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                           for x in (e.stdout, e.stderr))
        (step_out / "log.txt").write_text(text)
        ledger.steps.append(StepResult(step.name, status, rc, round(time.monotonic() - t0, 1), text[-_TAIL:]))
        _write(ledger, out)
    _write(ledger, out)
    if steps_dir.exists():
        with tarfile.open(out / "results.tar.gz", "w:gz") as tar:
            tar.add(steps_dir, arcname="steps")
        shutil.rmtree(steps_dir)
    return ledger


def _write(ledger: Ledger, out: Path) -> None:
    (out / "ledger.json").write_text(json.dumps(asdict(ledger), indent=2) + "\n")


def record(fetched: Path, results: Path = RESULTS) -> Path:
    """Unpack a fetched run (ledger.json + results.tar.gz) into results/<run id>/; refuse to overwrite."""
    ledger = json.loads((fetched / "ledger.json").read_text())
    dest = results / ledger["run_id"]
    if dest.exists():
        raise RunFileError(f"{dest} exists: a recorded run is never rewritten; give the new run another id")
    dest.mkdir(parents=True)
    shutil.copy(fetched / "ledger.json", dest / "ledger.json")
    archive = fetched / "results.tar.gz"
    if archive.exists():
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
    drop_fixture_copies(dest)
    return dest


FIXTURE_COPIES = "fx-copies.txt"


def drop_fixture_copies(run_dir: Path) -> list[Path]:
    """Remove each file under a step's `fx/` (device_env.sh's KPILOT_FIXTURE_OUT) whose bytes equal a file
    outside `fx/` in the same step: the recorded tree is what the device tool carries (64 MiB in all),
    and r33-r44 held each ncu corpus result twice. Each removal is listed, with its sha256 and the file it
    equals, in the step's fx-copies.txt. Returns the removed paths."""
    removed: list[Path] = []
    for step in sorted(p for p in (run_dir / "steps").glob("*") if (p / "fx").is_dir()):
        by_hash: dict[str, Path] = {}
        for f in sorted(step.rglob("*")):
            if f.is_file() and "fx" not in f.relative_to(step).parts[:1]:
                by_hash.setdefault(hashlib.sha256(f.read_bytes()).hexdigest(), f)
        lines = []
        for f in sorted((step / "fx").rglob("*")):
            if not f.is_file():
                continue
            digest = hashlib.sha256(f.read_bytes()).hexdigest()
            if (same := by_hash.get(digest)) is not None:
                lines.append(f"{f.relative_to(step)} {digest} = {same.relative_to(step)}")
                f.unlink()
                removed.append(f)
        if lines:
            listing = step / FIXTURE_COPIES
            old = listing.read_text().splitlines() if listing.exists() else []
            listing.write_text("\n".join(old + lines) + "\n")
            for d in sorted((step / "fx").rglob("*"), reverse=True):
                if d.is_dir() and not any(d.iterdir()):
                    d.rmdir()
            if not any((step / "fx").iterdir()):
                (step / "fx").rmdir()
    return removed


def run_stamp() -> dict[str, str]:
    """The stamp a result row carries: run id, commit, device, driver (from the ledger runner's environment;
    "not in a ledger run" outside one, never a guess)."""
    missing = "not in a ledger run"
    return {"run_id": os.environ.get("KPILOT_RUN_ID", missing),
            "commit": os.environ.get("KPILOT_RUN_COMMIT", missing),
            "device": os.environ.get("KPILOT_RUN_DEVICE", missing),
            "driver": os.environ.get("KPILOT_RUN_DRIVER", missing)}


def run_order(run_id: str) -> tuple[int, str]:
    """The order of recorded runs: by the number in the id (r9 before r10), then by the id."""
    digits = "".join(c for c in run_id if c.isdigit())
    return (int(digits) if digits else 0, run_id)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a run file (on the device)")
    r.add_argument("run_file", type=Path)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--commit", required=True, help="the commit the working tree is at (git rev-parse HEAD)")
    c = sub.add_parser("check", help="check a run file without running it")
    c.add_argument("run_file", type=Path)
    rec = sub.add_parser("record", help="unpack a fetched run into benchmarks/results/runs/<id>/")
    rec.add_argument("fetched", type=Path)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "check":
            rf = load_run_file(args.run_file)
            print(f"{rf.id}: {len(rf.steps)} steps, budget {rf.budget_s} s")
        elif args.cmd == "run":
            ledger = run(load_run_file(args.run_file), args.out, args.commit)
            for s in ledger.steps:
                print(f"{s.name}: {s.status} rc={s.returncode} {s.seconds} s")
        else:
            print(record(args.fetched))
    except RunFileError as e:
        print(f"ledger: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
