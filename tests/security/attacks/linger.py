"""Leave `count` daemons (own session, argv carries the marker) running, wait for SIGUSR1, then exit.

The test finds the daemons and this process on the host by the marker, holds a pidfd on each, and then
sends SIGUSR1: the worker exits cleanly with its daemons still alive unless the sandbox ends them.
"""

import signal
import subprocess
import sys

from services.toolrunner.worker_lib.io import read_request, write_result

req = read_request(dict)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
daemons = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", req["marker"]],
                            start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL) for _ in range(req["count"])]
got = signal.sigtimedwait({signal.SIGUSR1}, 120)
write_result({"started": len(daemons), "signalled": got is not None})
