"""kernelpilot planner service."""
