"""kpilot, the operator CLI: start and stop the stack, watch it, ask it for work."""
