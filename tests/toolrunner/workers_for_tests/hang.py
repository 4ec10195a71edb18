"""Start a grandchild in the same process group, report it and the scratch dir, then sleep forever."""

import os
import subprocess
import sys
import time

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)"])
print(f"grandchild={child.pid} scratch={os.environ['KPILOT_SCRATCH']}", flush=True)
time.sleep(1000)
