"""kopf's watch generators closed as the process exits leave one debug line, not a traceback;
other loop errors keep asyncio's handling."""

from __future__ import annotations

import asyncio
import logging
import types
from typing import Any

import pytest

from kopf_scheduler.service import kopf_shutdown


def _generator_from(filename: str) -> Any:
    source = "async def infinite_watch():\n    yield 1\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["infinite_watch"]()


def _context(generator: Any) -> dict[str, Any]:
    return {
        "message": f"an error occurred during closing of asynchronous generator {generator!r}",
        "exception": RuntimeError("generator didn't stop after athrow()"),
        "asyncgen": generator,
    }


def _handled(filename: str, caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    loop = asyncio.new_event_loop()
    generator = _generator_from(filename)
    assert isinstance(generator, types.AsyncGeneratorType)
    try:
        with caplog.at_level(logging.DEBUG):
            kopf_shutdown.handle_loop_error(loop, _context(generator))
    finally:
        loop.close()
    return caplog.records


def test_a_kopf_watch_closed_at_exit_is_not_an_error(caplog: pytest.LogCaptureFixture) -> None:
    records = _handled("/venv/site-packages/kopf/_cogs/clients/watching.py", caplog)
    assert not [r for r in records if r.levelno >= logging.WARNING]
    assert any("watch_stream_closed_at_exit" in r.getMessage() for r in records)


def test_other_generators_keep_asyncios_report(caplog: pytest.LogCaptureFixture) -> None:
    records = _handled("/srv/app/streams.py", caplog)
    errors = [r for r in records if r.levelno >= logging.ERROR]
    assert errors and "closing of asynchronous generator" in errors[0].getMessage()
