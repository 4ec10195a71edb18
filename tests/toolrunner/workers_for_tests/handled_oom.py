"""Log an out-of-memory error it handled (as inductor's max-autotune does for a template), then succeed."""

import sys

from services.toolrunner.worker_lib.io import read_request, write_result

request = read_request(dict)
print("torch.OutOfMemoryError: CUDA out of memory (a template choice, skipped)", file=sys.stderr)
write_result({"answer": request["question"]})
