"""Report the environment, working directory and scratch directory the sandbox gave this worker."""

import os
from pathlib import Path

from services.toolrunner.worker_lib.io import write_result

scratch = Path(os.environ["KPILOT_SCRATCH"])
(scratch / "leftover.bin").write_bytes(b"x" * 1024)
(scratch / "sub").mkdir()
(scratch / "sub" / "deeper.txt").write_text("left behind on purpose")
write_result({"env": dict(os.environ), "cwd": os.getcwd(), "scratch": str(scratch)})
