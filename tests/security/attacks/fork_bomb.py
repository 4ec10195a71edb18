"""Fork until the kernel refuses; every child sleeps. Report how many forks succeeded and why it stopped."""

import os
import time

from services.toolrunner.worker_lib.io import write_result

forked, error = 0, ""
while forked < 100_000:
    try:
        pid = os.fork()
    except OSError as e:
        error = f"{type(e).__name__}: {e}"
        break
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    forked += 1
write_result({"forked": forked, "error": error})
