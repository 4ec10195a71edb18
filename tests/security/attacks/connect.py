"""Try to open a TCP connection to NATS on the host's loopback and read its INFO line."""

import socket

from services.toolrunner.worker_lib.io import read_request, write_result

req = read_request(dict)
try:
    with socket.create_connection((req["host"], req["port"]), timeout=5) as s:
        write_result({"connected": True, "banner": s.recv(200).decode(errors="replace")})
except OSError as e:
    write_result({"connected": False, "error": f"{type(e).__name__}: {e}"})
