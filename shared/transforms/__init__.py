"""Deterministic source transformations of kernel tasks, one module each, listed in one table
(shared/transforms/table.py). Shared because the planner (services/planner/patcher.py, change kind
`transform`) and the kpilot CLI (`kpilot transform`) both apply them; a service never imports another.
"""
