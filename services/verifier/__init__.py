"""kernelpilot verifier service."""
