"""Where kopf-scheduler's time goes while a workload is measured: py-spy over each window.

A gap in the scheduler_perf table is named by its cause, and the cause is read off a profile
of the scheduler taking exactly the pods the figures cover. ``python -m bench upstream
--profile DIR`` starts ``py-spy record`` on kopf-scheduler's process when a metrics collection
starts and stops it when the collection stops, so setup (nodes, init pods) stays out. py-spy
samples from outside the process (``--nonblocking``: it never pauses it) and writes collapsed
stacks (frames by function, not by line), one line per distinct stack with its sample count,
which :func:`summary` reduces to the frames that took the most samples, on their own (self)
and with what they called (inclusive).
The file stays beside the results for a flame graph or a closer look. Profiled runs cost the
scheduler a little CPU, so they are made apart from the runs whose figures the table shows.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SAMPLE_RATE = 100
"""Samples a second: enough for a window of a few seconds, little cost to the process."""
TOP_FRAMES = 30
"""Frames kept in each ranking: the inclusive one starts with the dozen the event loop and the
process's entry point put under every stack."""
STOP_TIMEOUT = 60.0


class ProfilerError(RuntimeError):
    """py-spy is missing or could not profile the process."""


def py_spy() -> str:
    """The py-spy beside this Python (the project's virtualenv) or else on ``PATH``."""
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.is_file() else shutil.which("py-spy")
    if found is None:
        raise ProfilerError("py-spy is not installed (pip install py-spy)")
    return found


@dataclass
class WindowProfiler:
    """py-spy on one process, started and stopped with each collection window."""

    pid: int
    prefix: Path
    """Output files are ``<prefix>-window<N>.txt``."""
    rate: int = SAMPLE_RATE
    windows: list[dict[str, Any]] = field(default_factory=list)
    _running: tuple[subprocess.Popen[bytes], Path] | None = None

    def start(self) -> None:
        output = self.prefix.with_name(f"{self.prefix.name}-window{len(self.windows) + 1}.txt")
        output.parent.mkdir(parents=True, exist_ok=True)
        command = [
            py_spy(),
            "record",
            f"--pid={self.pid}",
            f"--rate={self.rate}",
            "--format=raw",
            "--nonblocking",
            "--function",
            f"--output={output}",
        ]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._running = (process, output)

    def stop(self) -> dict[str, Any]:
        """End the window's sampling; its summary, also kept in :attr:`windows`."""
        if self._running is None:
            raise ProfilerError("no profile is being recorded")
        process, output = self._running
        self._running = None
        process.send_signal(signal.SIGINT)
        try:
            _, errors = process.communicate(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            _, errors = process.communicate()
        if not output.exists():
            message = errors.decode(errors="replace").strip().splitlines()
            raise ProfilerError(
                f"py-spy wrote no profile: {message[-1] if message else 'no output'}"
            )
        window = {"file": str(output), **summary(output.read_text())}
        self.windows.append(window)
        return window

    def close(self) -> None:
        """Stop a sampling left running by a run that failed inside its window."""
        if self._running is not None:
            process, _ = self._running
            self._running = None
            process.kill()
            process.communicate()


def _frames(line: str) -> tuple[list[str], int]:
    stack, _, count = line.rstrip().rpartition(" ")
    return stack.split(";"), int(count)


def summary(collapsed: str, top: int = TOP_FRAMES) -> dict[str, Any]:
    """Samples in all, and the ``top`` frames by self and by inclusive samples (with their
    share of all samples) in py-spy's collapsed stacks."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in collapsed.splitlines():
        if not line.strip():
            continue
        frames, count = _frames(line)
        total += count
        own[frames[-1]] += count
        for frame in dict.fromkeys(frames):  # once per stack, outermost first
            inclusive[frame] += count

    def ranked(counter: Counter[str]) -> list[dict[str, Any]]:
        return [
            {"frame": frame, "samples": n, "share": round(n / total, 4)}
            for frame, n in counter.most_common(top)
        ]

    return {"samples": total, "self": ranked(own), "inclusive": ranked(inclusive)}
