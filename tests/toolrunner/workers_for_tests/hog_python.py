"""Allocate 4 GiB in pure Python; under a smaller RLIMIT_AS this raises MemoryError."""

blob = bytearray(4 << 30)
print(len(blob))
