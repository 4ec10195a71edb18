"""Write a result, then die of SIGSEGV: the crash must win over the result."""

import ctypes

from services.toolrunner.worker_lib.io import write_result

write_result({"ok": True})
ctypes.string_at(0)
