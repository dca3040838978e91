"""Read Prometheus text exposition and estimate histogram quantiles from it.

Both schedulers export upstream's metric names (``scheduler_scheduling_attempt_duration_seconds``,
``scheduler_framework_extension_point_duration_seconds``...), so the same estimate is made from
each one's own histogram. The estimate interpolates linearly inside the bucket, as PromQL's
``histogram_quantile`` does; it is only as precise as the bucket bounds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

Sample = tuple[str, dict[str, str], float]


def parse(text: str) -> list[Sample]:
    samples: list[Sample] = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            continue
        name, _, labels_text, value = match.groups()
        labels = dict(_LABEL.findall(labels_text or ""))
        try:
            samples.append((name, labels, float(value)))
        except ValueError:
            continue
    return samples


def _matches(labels: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in wanted.items())


def total(samples: list[Sample], name: str, **wanted: str) -> float:
    return sum(v for n, labels, v in samples if n == name and _matches(labels, wanted))


def by_label(samples: list[Sample], name: str, label: str, **wanted: str) -> dict[str, float]:
    result: dict[str, float] = {}
    for n, labels, v in samples:
        if n == name and _matches(labels, wanted):
            key = labels.get(label, "")
            result[key] = result.get(key, 0.0) + v
    return result


def histogram(samples: list[Sample], name: str, **wanted: str) -> dict[str, Any]:
    """count, sum, p50/p90/p99 (seconds) of a histogram summed over the matching series."""
    buckets: dict[float, float] = {}
    for n, labels, v in samples:
        if n == f"{name}_bucket" and _matches(labels, wanted):
            bound = float(labels["le"]) if labels.get("le") not in (None, "+Inf") else math.inf
            buckets[bound] = buckets.get(bound, 0.0) + v
    count = total(samples, f"{name}_count", **wanted)
    if not buckets or count == 0:
        return {"count": int(count)}
    ordered = sorted(buckets.items())
    return {
        "count": int(count),
        "sum": round(total(samples, f"{name}_sum", **wanted), 4),
        "p50": _quantile(ordered, 0.5),
        "p90": _quantile(ordered, 0.9),
        "p99": _quantile(ordered, 0.99),
    }


def _quantile(buckets: list[tuple[float, float]], q: float) -> float | None:
    total_count = buckets[-1][1]
    if total_count <= 0:
        return None
    rank = q * total_count
    previous_bound, previous_count = 0.0, 0.0
    for bound, cumulative in buckets:
        if cumulative >= rank:
            if math.isinf(bound):
                return previous_bound
            width = cumulative - previous_count
            if width <= 0:
                return bound
            return round(
                previous_bound + (bound - previous_bound) * (rank - previous_count) / width, 6
            )
        previous_bound, previous_count = bound, cumulative
    return previous_bound
