"""Backoff durations, the one-second ordering window and the two backoff heaps."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kopf_scheduler.framework.types import QueuedPodInfo
from kopf_scheduler.plugins.priority_sort import PrioritySort
from kopf_scheduler.queue.backoff import (
    NO_BACKOFF,
    BackoffQueue,
    align_to_window,
    backoff_duration,
    failure_count,
)
from tests.builders import make_pod
from tests.clock import FakeClock


@pytest.mark.parametrize(
    ("failures", "initial", "maximum", "expected"),
    [
        pytest.param(0, 1.0, 10.0, 0.0, id="never-failed-no-backoff"),
        pytest.param(1, 1.0, 10.0, 1.0, id="first"),
        pytest.param(2, 1.0, 10.0, 2.0, id="second"),
        pytest.param(3, 1.0, 10.0, 4.0, id="third"),
        pytest.param(4, 1.0, 10.0, 8.0, id="fourth"),
        pytest.param(5, 1.0, 10.0, 10.0, id="fifth-capped"),
        pytest.param(6, 1.0, 10.0, 10.0, id="sixth-capped"),
        pytest.param(16, 1e-9, 32e-9, 32e-9, id="upstream-normal"),
        pytest.param(32, 1e-9, (2**31 - 1) * 1e-9, (2**31 - 1) * 1e-9, id="overflow-32bit"),
        pytest.param(64, 1e-9, (2**63 - 1) * 1e-9, (2**63 - 1) * 1e-9, id="overflow-64bit"),
        pytest.param(10**9, 1.0, 10.0, 10.0, id="huge-count-terminates"),
        pytest.param(1, 30.0, 60.0, 30.0, id="custom-first"),
        pytest.param(3, 30.0, 60.0, 60.0, id="custom-capped"),
        pytest.param(1, 5.0, 3.0, 3.0, id="initial-above-max-is-capped"),
    ],
)
def test_backoff_duration(failures: int, initial: float, maximum: float, expected: float) -> None:
    assert backoff_duration(failures, initial, maximum) == pytest.approx(expected)


@given(
    st.integers(min_value=0, max_value=200),
    st.floats(min_value=0.001, max_value=100),
    st.floats(min_value=0.001, max_value=1000),
)
def test_backoff_duration_monotone_and_capped(
    failures: int, initial: float, maximum: float
) -> None:
    current = backoff_duration(failures, initial, maximum)
    following = backoff_duration(failures + 1, initial, maximum)
    assert 0 <= current <= following <= maximum
    if failures > 0:
        assert current == min(maximum, initial * 2 ** (failures - 1))


@pytest.mark.parametrize(
    ("unschedulable", "errors", "expected"),
    [
        pytest.param(0, 0, 0, id="never-failed"),
        pytest.param(3, 0, 3, id="rejections"),
        pytest.param(3, 2, 2, id="errors-since-last-rejection-win"),
        pytest.param(0, 4, 4, id="only-errors"),
    ],
)
def test_failure_count(unschedulable: int, errors: int, expected: int) -> None:
    info = QueuedPodInfo(make_pod("p").pod(), 0.0)
    info.unschedulable_count = unschedulable
    info.consecutive_errors_count = errors
    assert failure_count(info) == expected


def _info(
    name: str, timestamp: float, count: int = 1, plugin: str | None = "plugin", priority: int = 0
) -> QueuedPodInfo:
    info = QueuedPodInfo(make_pod(name).priority(priority).pod(), timestamp)
    info.unschedulable_count = count
    if plugin is not None:
        info.unschedulable_plugins = {plugin}
    return info


@pytest.mark.parametrize(
    ("timestamp", "count", "now", "backing_off"),
    [
        pytest.param(10.3, 1, 10.3, True, id="just-failed"),
        pytest.param(10.3, 1, 11.0, True, id="expiry-window-is-current"),
        pytest.param(10.3, 1, 11.99, True, id="end-of-expiry-window"),
        pytest.param(10.3, 1, 12.0, False, id="released-at-next-whole-second"),
        pytest.param(10.0, 1, 11.0, True, id="exact-second-still-backing-off"),
        pytest.param(10.0, 1, 12.0, False, id="exact-second-released-a-second-later"),
        pytest.param(10.3, 3, 14.9, True, id="third-failure-4s"),
        pytest.param(10.3, 3, 15.0, False, id="third-failure-released"),
        pytest.param(10.3, 0, 10.3, False, id="never-failed-never-backs-off"),
    ],
)
def test_whole_second_alignment(
    timestamp: float, count: int, now: float, backing_off: bool
) -> None:
    clock = FakeClock(now)
    queue = BackoffQueue(clock, PrioritySort().less)
    info = _info("p", timestamp, count)
    assert queue.is_backing_off(info) is backing_off


def test_expiry_is_aligned_and_cached_until_cleared() -> None:
    queue = BackoffQueue(FakeClock(10.3), PrioritySort().less)
    info = _info("p", 10.3)
    assert queue.backoff_time(info) == 11.0
    info.unschedulable_count = 5  # ignored while the cached value stands
    assert queue.backoff_time(info) == 11.0
    info.backoff_expiration = None
    assert queue.backoff_time(info) == 20.0
    assert queue.backoff_time(_info("q", 10.3, count=0)) == NO_BACKOFF


def test_align_to_window_ignores_float_noise() -> None:
    assert align_to_window(0.1 + 0.2 + 10.7) == 11.0
    assert align_to_window(11.999) == 11.0


NOW = 100.0
PODS = {
    "pod0": ("pod0", NOW - 2, "plugin"),
    "pod1": ("pod1", NOW + 1, "plugin"),
    "pod2": ("pod2", NOW - 2, None),
    "pod3": ("pod3", NOW + 1, None),
}


@pytest.mark.parametrize(
    ("in_backoff", "released"),
    [
        pytest.param([], [], id="both-heaps-empty"),
        pytest.param(["pod0", "pod1"], ["pod0"], id="rejected-heap-only"),
        pytest.param(["pod2", "pod3"], ["pod2"], id="error-heap-only"),
        pytest.param(["pod0", "pod1", "pod2", "pod3"], ["pod0", "pod2"], id="both-some"),
        pytest.param(["pod0", "pod2"], ["pod0", "pod2"], id="both-all"),
        pytest.param(["pod1", "pod3"], [], id="both-none"),
    ],
)
def test_pop_all_completed(in_backoff: list[str], released: list[str]) -> None:
    queue = BackoffQueue(FakeClock(NOW), PrioritySort().less)
    for name in in_backoff:
        pod_name, timestamp, plugin = PODS[name]
        queue.add(_info(pod_name, timestamp, plugin=plugin))
    got = [info.pod.name for info in queue.pop_all_completed()]
    assert got == released
    assert len(queue) == len(in_backoff) - len(released)


def test_same_window_ordered_like_active_queue() -> None:
    """Upstream TestBackoffQueueOrdering: window first, then priority, then timestamp."""
    queue = BackoffQueue(FakeClock(NOW), PrioritySort().less)
    for info in [
        _info("pod0", NOW, priority=1),
        _info("pod1", NOW - 1, priority=1),
        _info("pod2", NOW - 2 + 0.001, priority=2),
        _info("pod3", NOW - 2, priority=1),
        _info("pod4", NOW - 2, priority=2),
        _info("pod5", NOW - 3, priority=1),
    ]:
        queue.add(info)
    assert [info.pod.name for info in queue.pop_all_completed()] == [
        "pod5",
        "pod4",
        "pod2",
        "pod3",
    ]
    assert sorted(info.pod.name for info in queue.items()) == ["pod0", "pod1"]


def test_routing_between_heaps_and_early_pop() -> None:
    queue = BackoffQueue(FakeClock(NOW), PrioritySort().less)
    rejected = _info("rejected", NOW)
    errored = _info("errored", NOW - 5, plugin=None)
    queue.add(rejected)
    queue.add(errored)
    assert queue.len_rejected() == 1
    assert len(queue) == 2
    # Only the rejected heap may be popped before backoff ends.
    assert queue.pop_rejected() is rejected
    assert queue.pop_rejected() is None
    # Re-adding a record with rejectors moves it out of the error heap.
    errored.unschedulable_plugins = {"plugin"}
    queue.add(errored)
    assert queue.len_rejected() == 1
    assert len(queue) == 1


def test_update_pod_and_delete() -> None:
    queue = BackoffQueue(FakeClock(NOW), PrioritySort().less)
    info = _info("p", NOW, plugin=None)
    queue.add(info)
    newer = make_pod("p").label("v", "2").pod()
    assert queue.update_pod(newer) is info
    assert info.pod is newer
    assert queue.update_pod(make_pod("other").pod()) is None
    assert queue.delete("default/p") is info
    assert "default/p" not in queue
    assert queue.delete("default/p") is None


def test_rejects_non_positive_durations() -> None:
    with pytest.raises(ValueError, match="positive"):
        BackoffQueue(FakeClock(), PrioritySort().less, initial=0.0)
