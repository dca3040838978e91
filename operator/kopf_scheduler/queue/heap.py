"""A binary heap whose items are also reachable by key, ordered by an arbitrary ``less`` function.

The scheduling queue needs what :mod:`heapq` does not give: ordering by a plugin-supplied
comparison (QueueSort's ``less``, not a sort key), lookup and in-place update of a pod by its
``namespace/name`` key, and removal from the middle when a pod is deleted or activated. Each
operation is O(log n) except :meth:`KeyedHeap.items`, which copies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class KeyedHeap(Generic[T]):
    """A min-heap by ``less`` (the head is the item no other item is less than)."""

    __slots__ = ("_index", "_items", "_key", "_less")

    def __init__(self, key: Callable[[T], str], less: Callable[[T, T], bool]) -> None:
        self._key = key
        self._less = less
        self._items: list[T] = []
        self._index: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._items))

    def get(self, key: str) -> T | None:
        position = self._index.get(key)
        return None if position is None else self._items[position]

    def peek(self) -> T | None:
        return self._items[0] if self._items else None

    def items(self) -> list[T]:
        """All items, in heap (not sorted) order."""
        return list(self._items)

    def add_or_update(self, item: T) -> None:
        """Insert ``item``, or replace the item with the same key and restore the order."""
        key = self._key(item)
        position = self._index.get(key)
        if position is None:
            self._items.append(item)
            position = len(self._items) - 1
            self._index[key] = position
            self._sift_up(position)
            return
        self._items[position] = item
        self._fix(position)

    def pop(self) -> T | None:
        if not self._items:
            return None
        return self._remove_at(0)

    def delete(self, key: str) -> T | None:
        position = self._index.get(key)
        if position is None:
            return None
        return self._remove_at(position)

    def _remove_at(self, position: int) -> T:
        items = self._items
        item = items[position]
        last = items.pop()
        del self._index[self._key(item)]
        if position < len(items):
            items[position] = last
            self._index[self._key(last)] = position
            self._fix(position)
        return item

    def _fix(self, position: int) -> None:
        if not self._sift_down(position):
            self._sift_up(position)

    def _swap(self, i: int, j: int) -> None:
        items = self._items
        items[i], items[j] = items[j], items[i]
        self._index[self._key(items[i])] = i
        self._index[self._key(items[j])] = j

    def _sift_up(self, position: int) -> None:
        items = self._items
        less = self._less
        while position > 0:
            parent = (position - 1) // 2
            if not less(items[position], items[parent]):
                break
            self._swap(position, parent)
            position = parent

    def _sift_down(self, position: int) -> bool:
        """Move the item down as far as needed; returns whether it moved."""
        items = self._items
        less = self._less
        size = len(items)
        start = position
        while True:
            left = 2 * position + 1
            if left >= size:
                break
            smallest = left
            right = left + 1
            if right < size and less(items[right], items[left]):
                smallest = right
            if not less(items[smallest], items[position]):
                break
            self._swap(position, smallest)
            position = smallest
        return position != start
