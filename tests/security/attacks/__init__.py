"""Hostile sandbox workers: each tries one escape from issue 18 and reports what it achieved.

Targets come as "file:<path>" (not a bare absolute path): the sandbox binds a read-only copy of every
file a request names by absolute path, and an attacker does not get that help.
"""
