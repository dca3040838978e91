"""The scheduler's own latency histograms and attempt counts over one collection window, from
its /metrics.

Upstream resets the scheduler's metric registry when a collection starts and reads the
histograms when it stops, so its percentiles cover the collected pods only. A scheduler in its
own process cannot be reset, so the runner scrapes /metrics at both ends of the window and
takes the difference of every series: the same histograms, over the same pods. Both schedulers
export upstream's metric names, so one reading serves both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench import promtext

HISTOGRAMS: Mapping[str, tuple[str, Mapping[str, str]]] = {
    "pod_scheduling_sli_duration_s": ("scheduler_pod_scheduling_sli_duration_seconds", {}),
    "attempt_duration_scheduled_s": (
        "scheduler_scheduling_attempt_duration_seconds",
        {"result": "scheduled"},
    ),
}
ATTEMPTS = "scheduler_schedule_attempts_total"
"""Attempts by result (scheduled, unschedulable, error): how many failed attempts the window
cost, which the latencies alone do not show."""


def _key(sample: promtext.Sample) -> tuple[str, tuple[tuple[str, str], ...]]:
    name, labels, _ = sample
    return name, tuple(sorted(labels.items()))


def difference(before: str, after: str) -> list[promtext.Sample]:
    """Every series of ``after`` less its value in ``before`` (0 where it was absent)."""
    earlier = {_key(sample): sample[2] for sample in promtext.parse(before)}
    return [
        (name, labels, value - earlier.get(_key((name, labels, value)), 0.0))
        for name, labels, value in promtext.parse(after)
    ]


def window(before: str, after: str) -> dict[str, Any]:
    """count, sum, average and p50/p90/p99 (seconds) of each histogram between two scrapes, and
    the attempts made between them by result."""
    samples = difference(before, after)
    figures = {}
    for label, (name, wanted) in HISTOGRAMS.items():
        histogram = promtext.histogram(samples, name, **wanted)
        if histogram.get("count"):
            histogram["average"] = round(histogram["sum"] / histogram["count"], 6)
        figures[label] = histogram
    attempts = promtext.by_label(samples, ATTEMPTS, "result")
    figures["attempts"] = {result: round(count) for result, count in sorted(attempts.items())}
    return figures
