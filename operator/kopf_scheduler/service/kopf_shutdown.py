"""kopf's watch streams left open at exit, closed without a traceback.

When the operator stops while a watch is streaming, kopf leaves the stream's async generator
suspended; the event loop closes it as the process exits, kopf's stream block answers the close
with another await, and asyncio logs "an error occurred during closing of asynchronous
generator" with a traceback at error level. Nothing is lost (the process is exiting and the
watch was done), so that case becomes one debug line; every other loop error keeps asyncio's
own handling.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

logger = structlog.get_logger("kopf_scheduler.service")

_KOPF_PACKAGE = "/kopf/"


def _is_kopf_generator(generator: Any) -> bool:
    code = getattr(generator, "ag_code", None)
    return code is not None and _KOPF_PACKAGE in code.co_filename


def handle_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's exception handler: kopf's generators closed at exit, quietly."""
    generator = context.get("asyncgen")
    if generator is not None and _is_kopf_generator(generator):
        error = context.get("exception")
        logger.debug(
            "watch_stream_closed_at_exit",
            generator=getattr(generator, "__qualname__", ""),
            error=str(error) if error else None,
        )
        return
    loop.default_exception_handler(context)


def install(loop: asyncio.AbstractEventLoop) -> None:
    loop.set_exception_handler(handle_loop_error)
