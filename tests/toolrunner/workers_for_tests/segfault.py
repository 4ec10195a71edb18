"""Print the scratch dir, then dereference address 0 through ctypes: the process dies of SIGSEGV."""

import ctypes
import os

print(f"scratch={os.environ['KPILOT_SCRATCH']}", flush=True)
ctypes.string_at(0)
