"""Start a grandchild in a new session (so killpg misses it) that keeps stdout open, then sleep."""

import subprocess
import sys
import time

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
print(f"grandchild={child.pid}", flush=True)
time.sleep(1000)
