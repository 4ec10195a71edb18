"""Write a file into $TRITON_CACHE_DIR (as a Triton compile would) and report the path."""

import os
from pathlib import Path

from services.toolrunner.worker_lib.io import write_result

entry = Path(os.environ["TRITON_CACHE_DIR"]) / "abc123" / "kernel.cubin"
entry.parent.mkdir(parents=True, exist_ok=True)
entry.write_bytes(b"cubin bytes")
write_result({"entry": str(entry)})
