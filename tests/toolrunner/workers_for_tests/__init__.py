"""Tiny sandbox workers that misbehave on purpose; run as `python -m` by tests/toolrunner/test_sandbox.py."""
