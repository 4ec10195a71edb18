"""Try to read each target file (users.json, nats.conf, the creds of a stack); report what was read."""

from services.toolrunner.worker_lib.io import read_request, write_result
from tests.security.attacks._targets import unwrap

got = {}
for target in read_request(dict)["targets"]:
    path = unwrap(target)
    try:
        with open(path, "rb") as fh:
            got[path] = {"read": True, "bytes": len(fh.read())}
    except OSError as e:
        got[path] = {"read": False, "error": f"{type(e).__name__}: {e}"}
write_result(got)
