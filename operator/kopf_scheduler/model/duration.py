"""Go duration strings (``15s``, ``1m30s``, ``250ms``), as configuration files write them.

kube-scheduler reads durations with Go's ``time.ParseDuration``: an optional sign, then one or
more decimal numbers each with a unit (ns, us/µs/μs, ms, s, m, h), or a bare ``0``. The
configuration loader and plugin arguments both read them, each deciding what range is valid.
"""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,
    "\u03bcs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def go_duration_seconds(text: str) -> float | None:
    """``text`` in seconds as Go reads it; ``None`` when it is not a duration."""
    sign = -1.0 if text.startswith("-") else 1.0
    body = text[1:] if text[:1] in ("-", "+") else text
    if body == "0":
        return 0.0
    if not body:
        return None
    position = 0
    total = 0.0
    for match in _PART.finditer(body):
        if match.start() != position:
            return None
        total += float(match[1]) * _UNIT_SECONDS[match[2]]
        position = match.end()
    return sign * total if position == len(body) else None
