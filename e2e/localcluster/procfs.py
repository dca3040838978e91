"""A process's line of ``/proc/<pid>/stat``: whether it is the process we started, its parent,
the CPU time it used.

The control plane tells its own processes from recycled PIDs by their start time, the real node
walks the process tree, and the benchmarks measure CPU time; all read the same line. Its second
field, the command name, is in parentheses and may hold spaces and parentheses itself, so the
line is split after the last ``)``: the fields here start with ``proc(5)``'s third, the state.
"""

from __future__ import annotations

import os
from pathlib import Path

CLOCK_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")

STATE = 0
PARENT_PID = 1
USER_TICKS = 11
SYSTEM_TICKS = 12
START_TIME = 19
"""Indexes into :func:`stat_fields`: ``proc(5)``'s field numbers minus three."""


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``pid``'s stat line from the state on, or ``None`` when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()


def cpu_ticks(fields: list[str]) -> int:
    """User plus system CPU time, in clock ticks (:data:`CLOCK_TICKS_PER_SECOND`)."""
    return int(fields[USER_TICKS]) + int(fields[SYSTEM_TICKS])


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of ``pid`` in seconds, or ``None`` when it is gone."""
    fields = stat_fields(pid)
    if fields is None:
        return None
    return cpu_ticks(fields) / CLOCK_TICKS_PER_SECOND


def process_ids() -> list[int]:
    """The PIDs of every process this machine shows."""
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]
