"""The processes a local cluster starts: spawned in sessions of their own, recorded by PID and
start time, stopped by process group.

The control plane (``cluster.py``) and the real node attached to it (``realnode.py``) start and
stop their processes the same way; this module is what both build on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import procfs


def proc_start_time(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot, or None if it is gone.

    Stored next to the PID so that a recycled PID is never mistaken for ours.
    """
    fields = procfs.stat_fields(pid)
    if fields is None or fields[procfs.STATE] == "Z":
        return None
    return int(fields[procfs.START_TIME])


@dataclass
class Process:
    name: str
    pid: int
    start_time: int
    log: str

    def alive(self) -> bool:
        return proc_start_time(self.pid) == self.start_time

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "start_time": self.start_time, "log": self.log}


def spawn_logged(
    args: Sequence[str],
    log_path: Path,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``args`` in a session of its own, appending its output to ``log_path``.

    The command line is written first, so a log says what produced it; the process gets its own
    process group, so stopping it (and its children) never signals ours.
    """
    with log_path.open("ab") as log:
        log.write(f"\n$ {' '.join(args)}\n".encode())
        log.flush()
        return subprocess.Popen(
            list(args),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )


def terminate(proc: Process, timeout: float, popen: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM the process group we created for ``proc``, then SIGKILL after ``timeout``."""

    def gone(within: float) -> bool:
        deadline = time.monotonic() + within
        while True:
            if popen is not None:
                popen.poll()  # reap it if it is our own child
            if not proc.alive():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    if proc.alive():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        if not gone(timeout):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            gone(5)
    # A dead child of init stays a zombie until init reaps it; give that a moment so that
    # `ps` right after `down` shows nothing.
    deadline = time.monotonic() + 2
    while Path(f"/proc/{proc.pid}").exists() and time.monotonic() < deadline:
        if popen is not None:
            popen.poll()
        time.sleep(0.05)


def log_tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a process's log, for an error that says why it stopped."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {path})"
