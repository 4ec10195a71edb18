"""Write `mb` MiB into one file in the scratch dir and another in /tmp; report how far each got."""

import os

from services.toolrunner.worker_lib.io import read_request, write_result

req = read_request(dict)
got = {}
for where in (os.environ["KPILOT_SCRATCH"], "/tmp"):
    written, error = 0, ""
    try:
        with open(os.path.join(where, "big.bin"), "wb") as fh:
            for _ in range(req["mb"]):
                fh.write(b"\0" * (1 << 20))
                fh.flush()
                written += 1
    except OSError as e:
        error = f"{type(e).__name__}: {e}"
    got[where] = {"mb": written, "error": error}
write_result(got)
