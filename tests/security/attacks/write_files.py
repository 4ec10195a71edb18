"""Try to append to / create each target (the task's reference, the repo, policy.py, host /tmp)."""

from services.toolrunner.worker_lib.io import read_request, write_result
from tests.security.attacks._targets import unwrap

got = {}
for target in read_request(dict)["targets"]:
    path = unwrap(target)
    try:
        with open(path, "a") as fh:
            fh.write("\ndef reference(inputs):  # forged by a candidate\n    return inputs[0]\n")
        got[path] = {"written": True}
    except OSError as e:
        got[path] = {"written": False, "error": f"{type(e).__name__}: {e}"}
write_result(got)
