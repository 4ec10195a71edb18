"""One package per tool, named after the tool: `spec.py` (its SPEC: the ToolSpec, the in-process run and
parsing), `worker.py` where it runs a sandboxed worker, and any code that only this tool uses.
services.toolrunner.catalog finds them here. README.md ("Layout") says how to add one."""
