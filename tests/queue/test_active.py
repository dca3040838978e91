"""The keyed heap and activeQ ordering."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kopf_scheduler.framework.types import QueuedPodInfo
from kopf_scheduler.plugins.priority_sort import PrioritySort
from kopf_scheduler.queue.active import ActiveQueue, stable_less
from kopf_scheduler.queue.heap import KeyedHeap
from tests.builders import make_pod


def _info(name: str, priority: int = 0, timestamp: float = 0.0, sequence: int = 0) -> QueuedPodInfo:
    return QueuedPodInfo(
        make_pod(name).priority(priority).pod(), timestamp=timestamp, sequence=sequence
    )


@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "delete", "pop"]), st.integers(0, 9), st.integers(-5, 5)),
        max_size=60,
    )
)
def test_keyed_heap_matches_a_sorted_model(ops: list[tuple[str, int, int]]) -> None:
    heap: KeyedHeap[tuple[str, int]] = KeyedHeap(lambda item: item[0], lambda a, b: a[1] < b[1])
    model: dict[str, int] = {}
    for op, key_index, value in ops:
        key = f"k{key_index}"
        if op == "add":
            heap.add_or_update((key, value))
            model[key] = value
        elif op == "delete":
            removed = heap.delete(key)
            assert (removed is None) == (key not in model)
            model.pop(key, None)
        else:
            popped = heap.pop()
            if not model:
                assert popped is None
                continue
            assert popped is not None
            assert popped[1] == min(model.values())
            del model[popped[0]]
        assert len(heap) == len(model)
        assert all(key in heap for key in model)
        head = heap.peek()
        if model:
            assert head is not None
            assert head[1] == min(model.values())


@pytest.mark.parametrize(
    ("pods", "order"),
    [
        pytest.param(
            [("low", 0, 1.0), ("high", 10, 2.0), ("mid", 5, 3.0)],
            ["high", "mid", "low"],
            id="priority-first",
        ),
        pytest.param(
            [("b", 0, 2.0), ("a", 0, 1.0), ("c", 0, 3.0)],
            ["a", "b", "c"],
            id="equal-priority-by-timestamp",
        ),
        pytest.param(
            [("second", 1, 5.0), ("first", 1, 5.0)],
            ["second", "first"],
            id="equal-timestamp-by-arrival",
        ),
        pytest.param(
            [("old-low", -5, 0.0), ("new-high", 1000, 9.0)],
            ["new-high", "old-low"],
            id="priority-beats-age",
        ),
    ],
)
def test_active_queue_pop_order(pods: list[tuple[str, int, float]], order: list[str]) -> None:
    queue = ActiveQueue(PrioritySort().less)
    for sequence, (name, priority, timestamp) in enumerate(pods):
        queue.add_or_update(_info(name, priority, timestamp, sequence))
    popped = []
    while (info := queue.pop()) is not None:
        popped.append(info.pod.name)
    assert popped == order


def test_stable_less_breaks_ties_by_sequence() -> None:
    by_priority_only = stable_less(lambda a, b: a.pod.priority > b.pod.priority)
    first = _info("a", 1, sequence=1)
    second = _info("b", 1, sequence=2)
    assert by_priority_only(first, second)
    assert not by_priority_only(second, first)
    assert by_priority_only(_info("c", 2, sequence=9), first)


def test_update_pod_replaces_object_and_reorders() -> None:
    queue = ActiveQueue(PrioritySort().less)
    queue.add_or_update(_info("a", 5, sequence=1))
    queue.add_or_update(_info("b", 1, sequence=2))
    assert queue.update_pod(make_pod("b").priority(9).pod()) is not None
    head = queue.peek()
    assert head is not None
    assert head.pod.name == "b"
    assert queue.update_pod(make_pod("zzz").pod()) is None
    assert queue.delete("default/a") is not None
    assert len(queue) == 1
