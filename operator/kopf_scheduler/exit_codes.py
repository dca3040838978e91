"""The exit codes of ``kopf-scheduler`` and ``kubectl kopf-scheduler``, in one place.

Scripts branch on them, so they mean the same in every command: 0 success; 1 the command could
not do its work at run time (the API server refused a request or could not be reached, the pod is
not found, the health port is taken, leadership was lost); 2 the command line or a file it names
is wrong (configuration, kubeconfig, scenario); 130 interrupted with Ctrl-C; 141 the reader of
the output went away (``| head``).

A closed pipe is not a failure of the command, but the output it wanted to give was not all read:
141 is what a shell reports for a program killed by SIGPIPE, so ``set -o pipefail`` scripts see
the same status as with coreutils, and no traceback is printed whatever the output's size.

A command that has loaded a whole cluster (``capacity`` and ``simulate`` on a snapshot of 50,000
pods) holds hundreds of thousands of objects when it is done; the interpreter would free them one
by one before the process ends, seconds after the answer was printed. The console command leaves
through :func:`leave` instead, which flushes the output and ends the process at once: the
operating system takes the memory back in one go.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

SUCCESS = 0
RUNTIME = 1
USAGE = 2
INTERRUPTED = 130
CLOSED_PIPE = 141


class CommandError(Exception):
    """A command cannot go on: ``message`` is its one line for stderr, ``code`` its exit code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def run_command(command: Callable[[], int]) -> int:
    """Run ``command`` with its output flushed inside; map Ctrl-C, a closed pipe and a
    ``CommandError`` (its line printed as ``error: ...``) to codes."""
    try:
        code = command()
        sys.stdout.flush()
    except CommandError as failure:
        print(f"error: {failure.message}", file=sys.stderr)
        return failure.code
    except KeyboardInterrupt:
        return INTERRUPTED
    except BrokenPipeError:
        _discard_stdout()
        return CLOSED_PIPE
    return code


def run_parsed(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    """Parse ``argv`` and run the chosen sub-command's ``handler`` as :func:`run_command` does:
    the ``main`` of both console commands."""
    args = parser.parse_args(argv)
    return run_command(lambda: int(args.handler(args)))


def leave(code: int) -> NoReturn:
    """End the process with ``code`` once stdout and stderr are flushed, without freeing the
    heap object by object or running exit handlers (the commands register none)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone, a stream closed
            stream.flush()
    os._exit(code)


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's flush at exit does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
