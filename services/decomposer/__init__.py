"""kernelpilot decomposer service."""
