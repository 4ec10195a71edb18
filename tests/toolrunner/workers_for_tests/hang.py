"""Start a grandchild in the same process group, report it and the scratch dir, then sleep forever.

The grandchild's argv carries the request's "marker", so a test can find it on the host (its pid here is
one of the sandbox's pid namespace).
"""

import json
import os
import subprocess
import sys
import time

marker = json.loads(sys.stdin.read() or "{}").get("marker", "-")
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)", marker])
print(f"grandchild={child.pid} scratch={os.environ['KPILOT_SCRATCH']}", flush=True)
time.sleep(1000)
