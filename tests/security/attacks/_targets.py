"""Shared by the attack workers: decode "file:<path>" targets."""

from __future__ import annotations


def unwrap(target: str) -> str:
    return target.removeprefix("file:")
