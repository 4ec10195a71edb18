"""kpilot capture --out DIR [--top N] [--min-share F] -- CMD [ARGS...]: bring your own kernel.

Runs an unmodified Python program with a capture hook (a generated `sitecustomize.py` first on
PYTHONPATH; services/kpilot/capture/hook.py) that records every Triton kernel launch, then writes a task
file for each of the hottest kernels and DIR/capture.json (kernel, origin, share, task path). Works on a
GPU (time from CUDA events) and on CPU under TRITON_INTERPRET=1 (ranked by calls * elements: no GPU time).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_BOOT = """from services.kpilot.capture.hook import install
install({out!r}, {cmd!r})
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capture", help="run a program, record its Triton kernels, write a task per hot kernel")
    p.add_argument("--out", type=Path, required=True, help="folder for the tasks and capture.json")
    p.add_argument("--top", type=int, default=3, help="write tasks for at most this many kernels (default 3)")
    p.add_argument("--min-share", type=float, default=0.0, help="skip kernels below this share (0..1)")
    p.add_argument("--json", action="store_true", help="print capture.json instead of a table")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- python script.py [ARGS...]")
    p.set_defaults(func=_capture)


def _capture(args: argparse.Namespace) -> int:
    import msgspec

    from services.kpilot.capture.taskgen import write_tasks

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise ValueError("no program given: write kpilot capture --out DIR -- python script.py [ARGS...]")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    root = Path(__file__).resolve().parents[3]
    with tempfile.TemporaryDirectory(prefix="kpilot-capture-") as boot:
        Path(boot, "sitecustomize.py").write_text(_BOOT.format(out=str(out), cmd=cmd))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (boot, str(root), env.get("PYTHONPATH", "")) if p)
        rc = subprocess.run(cmd, env=env, check=False).returncode
    raw = out / "raw" / "capture.json"
    if not raw.is_file():
        print(f"kpilot capture: the program (exit {rc}) launched no Triton kernel (no {raw})", file=sys.stderr)
        return 1
    rep = write_tasks(raw, out, args.top, args.min_share)
    if args.json:
        print(msgspec.json.format(msgspec.json.encode(rep)).decode())
    else:
        print(f"program exit {rc}; timing: {rep.timing}")
        for k in rep.kernels:
            where = k.task or ("; ".join(k.problems) if k.problems else "not written (below --top/--min-share)")
            print(f"{k.share:6.1%} of {k.share_of}  {k.calls:5d} calls  {k.kernel}  ({k.origin})  -> {where}")
    return 0 if rc == 0 else 1
