"""The pod state the runner watches, upstream's SchedulingThroughput, and the metric windows."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from bench.upstream import schedmetrics, throughput
from bench.upstream.podstate import PodRecord, PodState


class FakeTime:
    """A clock that moves only when the collector sleeps; the scheduled count is read from a
    table of (time, count) steps."""

    def __init__(self, steps: list[tuple[float, int]]) -> None:
        self.now = 0.0
        self.steps = steps

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        if self.now > self.steps[-1][0] + 0.5:
            raise asyncio.CancelledError

    def scheduled(self) -> int:
        return max((count for at, count in self.steps if at <= self.now + 1e-9), default=0)


async def _rates(steps: list[tuple[float, int]]) -> list[float]:
    fake = FakeTime(steps)
    collector = throughput.ThroughputCollector(fake.scheduled, fake.clock, fake.sleep)
    with pytest.raises(asyncio.CancelledError):
        await collector.run()
    return collector.rates


async def test_the_first_sample_with_pods_is_only_the_baseline() -> None:
    rates = await _rates([(0.0, 0), (1.0, 0), (2.0, 50), (3.0, 150), (4.0, 300)])
    assert rates == [100.0, 150.0]


async def test_a_second_without_progress_is_folded_into_the_next_and_counted_twice() -> None:
    rates = await _rates([(1.0, 10), (2.0, 10), (3.0, 50)])
    assert rates == [20.0, 20.0]


async def test_a_run_within_its_first_second_has_no_samples() -> None:
    assert await _rates([(0.5, 10)]) == []
    assert throughput.summary([]) == {"samples": 0}


def test_the_summary_uses_nearest_rank_percentiles() -> None:
    rates = [float(r) for r in range(1, 101)]
    assert throughput.summary(rates) == {
        "samples": 100,
        "Average": 50.5,
        "Perc50": 50.0,
        "Perc90": 90.0,
        "Perc95": 95.0,
        "Perc99": 99.0,
    }


def _pod(name: str, namespace: str = "ns", node: str = "", **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name[:1]}},
        "spec": {"nodeName": node} if node else {},
        "status": status,
    }


def test_pods_are_scheduled_once_bound_and_attempted_once_they_carry_the_condition() -> None:
    state = PodState()
    seen: list[PodRecord] = []
    state.on_scheduled(seen.append)
    gated = {
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]
    }
    state.observe("ADDED", _pod("a1", **gated))
    state.observe("ADDED", _pod("b1"))
    state.observe("ADDED", _pod("b2", namespace="other", node="n1"))
    assert state.scheduled() == 1
    assert state.attempted(["ns"]) == 1
    state.observe("MODIFIED", _pod("b1", node="n2"))
    assert state.scheduled(["ns"]) == 1
    assert state.scheduled(None, {"app": "b"}) == 2
    assert [r.name for r in seen] == ["b2", "b1"]
    state.observe("DELETED", _pod("b1", node="n2"))
    assert state.scheduled(["ns"]) == 0


def test_the_metric_window_is_the_difference_of_two_scrapes() -> None:
    before = "\n".join(
        [
            'scheduler_pod_scheduling_sli_duration_seconds_bucket{le="0.1"} 5',
            'scheduler_pod_scheduling_sli_duration_seconds_bucket{le="1"} 5',
            'scheduler_pod_scheduling_sli_duration_seconds_bucket{le="+Inf"} 5',
            "scheduler_pod_scheduling_sli_duration_seconds_sum 0.2",
            "scheduler_pod_scheduling_sli_duration_seconds_count 5",
        ]
    )
    after = "\n".join(
        [
            'scheduler_pod_scheduling_sli_duration_seconds_bucket{le="0.1"} 5',
            'scheduler_pod_scheduling_sli_duration_seconds_bucket{le="1"} 15',
            'scheduler_pod_scheduling_sli_duration_seconds_bucket{le="+Inf"} 15',
            "scheduler_pod_scheduling_sli_duration_seconds_sum 5.2",
            "scheduler_pod_scheduling_sli_duration_seconds_count 15",
        ]
    )
    window = schedmetrics.window(before, after)
    sli = window["pod_scheduling_sli_duration_s"]
    assert sli["count"] == 10
    assert sli["average"] == 0.5
    assert 0.1 < sli["p50"] <= 1.0
    assert window["attempt_duration_scheduled_s"] == {"count": 0}


def test_the_metric_window_counts_the_attempts_made_in_it_by_result() -> None:
    before = "\n".join(
        [
            'scheduler_schedule_attempts_total{profile="p",result="scheduled"} 4',
            'scheduler_schedule_attempts_total{profile="p",result="unschedulable"} 7',
        ]
    )
    after = "\n".join(
        [
            'scheduler_schedule_attempts_total{profile="p",result="scheduled"} 10',
            'scheduler_schedule_attempts_total{profile="p",result="unschedulable"} 30',
            'scheduler_schedule_attempts_total{profile="q",result="unschedulable"} 2',
        ]
    )
    window = schedmetrics.window(before, after)
    assert window["attempts"] == {"scheduled": 6, "unschedulable": 25}
