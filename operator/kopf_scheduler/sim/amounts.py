"""Amounts of resources as the reports write them, in the units a manifest would use.

CPU is counted in millicores and written as Kubernetes writes it (``2``, ``500m``); bytes get
the largest binary suffix that divides them (``8Gi``, ``1536Mi``); a count (pods, an extended
resource) is written as it is.
"""

from __future__ import annotations

from fractions import Fraction

from kopf_scheduler.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY

_BINARY_SUFFIXES = (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10))


def format_cpu(milli: int | Fraction) -> str:
    milli = int(milli)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def format_bytes(value: int | Fraction) -> str:
    value = int(value)
    for suffix, size in _BINARY_SUFFIXES:
        if value and value % size == 0:
            return f"{value // size}{suffix}"
    return str(value)


def format_amount(resource: str, value: int) -> str:
    """``value`` of ``resource`` (CPU in millicores, memory and storage in bytes)."""
    if resource == CPU:
        return format_cpu(value)
    if resource in (MEMORY, EPHEMERAL_STORAGE):
        return format_bytes(value)
    return str(value)
