"""Print a last word to stderr, then abort(): the process dies of SIGABRT."""

import os
import sys

print("about to abort", file=sys.stderr, flush=True)
os.abort()
