"""A fixed CPU load beside the scheduler under test: busy neighbours on the machine.

``BusyNeighbours(n)`` is ``n`` processes that each spin a pure-Python loop at the default
priority (nice 0): each is one runnable thread that takes a whole CPU whenever the kernel gives
it one, and does nothing else (no I/O, no memory growth). The end-to-end runs start them once the
control plane has settled, just before the scheduler under test starts, and stop them when its
run ends (``python -m bench contention``, :mod:`bench.contention`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

from e2e.localcluster import procfs

SPIN = "while True: pass"


class BusyNeighbours:
    """``count`` busy processes; :meth:`stop` ends them and gives the CPU seconds they had."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._processes: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        for _ in range(self.count):
            self._processes.append(
                subprocess.Popen(
                    [sys.executable, "-c", SPIN],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self._processes]

    def stop(self) -> float:
        cpu_seconds = 0.0
        for process in self._processes:
            cpu_seconds += procfs.cpu_seconds(process.pid) or 0.0
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        self._processes = []
        return round(cpu_seconds, 2)
