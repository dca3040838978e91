"""Throughput and latency figures, computed the same way for every run.

Throughput follows scheduler_perf's collector: the number of bound measured pods is sampled
once per second from the start of the measurement, each sample's rate is the difference to the
previous one, the first sample is skipped, and the average and the 50th percentile of the
rates are reported. Sampling after the fact from exact bind times gives the same samples a
ticker would. scheduler_perf stops its collector when the last pod is scheduled, so the last,
partial interval is lost there. Here it is kept, since the pods bound in it can be all of them
(preemptors bound in one burst at the end): a tail of at least half a second is its own sample
(its rate scaled to its length); a shorter one joins the last full sample into one interval of
1 + tail seconds; in a run shorter than a second it is the only sample.

Percentiles use scheduler_perf's nearest-rank rule: the value at ``ceil(n * p / 100) - 1`` of
the sorted list.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def figure(run: Mapping[str, Any], path: Sequence[str]) -> float | None:
    """The number at ``path`` in a run's nested result (None where it is missing or not a
    number)."""
    value: Any = run
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return float(value) if isinstance(value, int | float) else None


def percentile(values: Iterable[float], p: float) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    index = max(0, math.ceil(len(ordered) * p / 100) - 1)
    return ordered[min(index, len(ordered) - 1)]


def summary(values: Sequence[float], scale: float = 1.0, digits: int = 3) -> dict[str, Any]:
    """count, p50, p90, p99, max and mean; values multiplied by ``scale`` (e.g. 1000 for ms)."""
    if not values:
        return {"count": 0}

    def r(x: float | None) -> float | None:
        return None if x is None else round(x * scale, digits)

    return {
        "count": len(values),
        "p50": r(percentile(values, 50)),
        "p90": r(percentile(values, 90)),
        "p99": r(percentile(values, 99)),
        "max": r(max(values)),
        "mean": r(sum(values) / len(values)),
    }


def per_second_rates(times: Iterable[float], start: float, min_tail: float = 0.5) -> list[float]:
    """Rates of the one-second samples between ``start`` and the last event (none skipped)."""
    ordered = sorted(t for t in times if t >= start)
    if not ordered:
        return []
    end = ordered[-1]
    full = int((end - start) // 1.0)
    counts = [0] * (full + 1)
    for t in ordered:
        counts[min(int((t - start) // 1.0), full)] += 1
    rates = [float(c) for c in counts[:full]]
    tail = (end - start) - full
    if tail >= min_tail or not rates:
        rates.append(counts[full] / max(tail, 1e-3))
    elif counts[full]:
        # A short tail joins the last full sample: one (1 + tail)-second interval.
        rates[-1] = (rates[-1] + counts[full]) / (1.0 + tail)
    return rates


def throughput(times: Iterable[float], start: float) -> dict[str, Any]:
    """scheduler_perf's SchedulingThroughput: average and p50 of per-second rates, first skipped."""
    times = list(times)
    rates = per_second_rates(times, start)
    used = rates[1:] if len(rates) > 1 else rates
    if not used:
        return {"samples": 0, "average": None, "p50": None}
    finished = max(times) - start if times else 0.0
    return {
        "samples": len(used),
        "average": round(sum(used) / len(used), 2),
        "p50": round(percentile(used, 50) or 0.0, 2),
        "p90": round(percentile(used, 90) or 0.0, 2),
        "min": round(min(used), 2),
        "max": round(max(used), 2),
        "overall": round(len(times) / finished, 2) if finished > 0 else None,
        "seconds": round(finished, 3),
        "rates": [round(r, 2) for r in rates],
    }


def gaps(times: Iterable[float]) -> dict[str, Any]:
    """Head-of-line gaps: the intervals between consecutive binds, in milliseconds."""
    ordered = sorted(times)
    deltas = [b - a for a, b in itertools.pairwise(ordered)]
    return summary(deltas, scale=1000.0, digits=2)


def ratio(ours: float | None, upstream: float | None) -> float | None:
    if ours is None or upstream is None or upstream == 0:
        return None
    return round(ours / upstream, 3)
