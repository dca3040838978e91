"""structlog configuration: JSON lines in clusters, readable console output on a terminal.

The scheduler logs with snake_case event names and fixed keys (``pod``, ``node``, ``plugin``,
``extension_point``, ``cycle``, ``preemptor``, ``victims``, ``reason``); stdlib loggers (kopf,
aiohttp, ours) go through the same renderer so one process writes one format.
"""

from __future__ import annotations

import logging
import os
import sys

import structlog


def wants_json(explicit: str | None) -> bool:
    if explicit is not None:
        return explicit == "json"
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) or not sys.stderr.isatty()


def configure_logging(level: str = "info", log_format: str | None = None) -> None:
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer()
        if wants_json(log_format)
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("aiohttp.access", "kopf.objects"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
