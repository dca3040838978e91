"""Per-attempt scratch space shared by the plugins of one scheduling cycle.

Keys are typed (:class:`StateKey`), so ``state.read(KEY)`` is checked by mypy. Preemption dry
runs clone the state: values that implement ``clone()`` are cloned, others are shared (they must
then be immutable).
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, Self, TypeVar, cast, runtime_checkable

from kopf_scheduler.framework.protocol_check import class_satisfies

T = TypeVar("T")


@runtime_checkable
class Clonable(Protocol):
    def clone(self) -> Any: ...


class SharedState:
    """State a plugin never modifies once written, so a clone of the cycle state shares it."""

    __slots__ = ()

    def clone(self) -> Self:
        return self


class StateKey(Generic[T]):
    """A typed key; create one per plugin at module level."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"StateKey({self.name})"


class StateNotFoundError(KeyError):
    def __init__(self, key: StateKey[Any]) -> None:
        super().__init__(key.name)
        self.key = key

    def __str__(self) -> str:
        return f"{self.key.name!r} not found in the cycle state"


class CycleState:
    __slots__ = ("_data", "record_plugin_metrics", "skip_filter_plugins", "skip_score_plugins")

    def __init__(self) -> None:
        self._data: dict[StateKey[Any], Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.record_plugin_metrics = False

    def write(self, key: StateKey[T], value: T) -> None:
        self._data[key] = value

    def read(self, key: StateKey[T]) -> T:
        try:
            return cast(T, self._data[key])
        except KeyError:
            raise StateNotFoundError(key) from None

    def get(self, key: StateKey[T]) -> T | None:
        return cast("T | None", self._data.get(key))

    def delete(self, key: StateKey[Any]) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        clone = CycleState()
        for key, value in self._data.items():
            clone._data[key] = value.clone() if class_satisfies(type(value), Clonable) else value
        clone.skip_filter_plugins = set(self.skip_filter_plugins)
        clone.skip_score_plugins = set(self.skip_score_plugins)
        clone.record_plugin_metrics = self.record_plugin_metrics
        return clone
