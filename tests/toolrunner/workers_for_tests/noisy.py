"""Print result-looking JSON and junk to stdout and stderr around writing the real result."""

import sys

from services.toolrunner.worker_lib.io import read_request, write_result

request = read_request(dict)
print('{"answer": "from stdout, must be ignored"}')
print("\x00\xff binary-ish noise", "x" * 20000)
print('{"answer": "from stderr"}', file=sys.stderr)
write_result({"answer": request["question"] * 2})
print('{"answer": "after the result"}', flush=True)
