"""Leave a detached-output child running (same process group), report its pid, and exit cleanly."""

import subprocess
import sys

from services.toolrunner.workers._io import write_result

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
write_result({"child": child.pid})
