"""Read the request, then raise: a plain failure with a traceback on stderr and no result."""


from services.toolrunner.worker_lib.io import read_request

request = read_request(dict)
raise ValueError(f"bad kernel name {request['kernel']!r}: use one of the task's KERNELS")
