"""Planner policies: one `propose(context) -> Plan` interface, rules (default) and llm."""
