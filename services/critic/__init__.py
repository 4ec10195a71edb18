"""kernelpilot critic service."""
