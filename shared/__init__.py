"""Contracts every kernelpilot service imports: messages, subjects, bus, config, logging."""
