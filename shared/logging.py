"""structlog JSON logs carrying service, job_id and message id; configured by entry points only."""

from __future__ import annotations

import logging
import sys

import structlog


def configure(service: str, level: str = "info", *, json: bool = True) -> None:
    """Call once from a `__main__`; library code only asks `structlog.get_logger()`."""
    logging.basicConfig(level=level.upper(), stream=sys.stderr, format="%(message)s")
    renderer = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    structlog.contextvars.bind_contextvars(service=service)
