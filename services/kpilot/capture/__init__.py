"""Bring your own kernel: capture the Triton kernels an unmodified program launches and write task files.

`hook` runs inside the user's program (installed by a generated `sitecustomize`), `records` is what it
writes, `source` extracts a kernel's source with its jit helpers and globals, `taskgen` turns the records
into task files (examples/README.md) and `DIR/capture.json`.
"""
