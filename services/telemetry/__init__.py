"""kernelpilot telemetry service."""
