"""Plugin results: a code, the reasons a user reads, and the plugin that produced them.

A rejection may also carry a ``detail`` for decision records (``explain``, the simulator's
report): what the reasons, which are upstream's texts and go into events and conditions, leave
out. It may be given as a function, so that working it out costs only when a record is read.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}

_REJECTIONS = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})


class Status:
    """An immutable plugin result. Use :data:`SUCCESS` for plain success."""

    __slots__ = ("_detail", "code", "error", "plugin", "reasons")

    def __init__(
        self,
        code: Code,
        *reasons: str,
        plugin: str = "",
        error: BaseException | None = None,
        detail: str | Callable[[], str] | None = None,
    ) -> None:
        self.code = code
        self.reasons: tuple[str, ...] = reasons
        self.plugin = plugin
        self.error = error
        self._detail = detail

    def detail(self) -> str:
        """The explanation beyond the reasons, worked out on the first call; ``""`` if none."""
        detail = self._detail
        if callable(detail):
            detail = self._detail = detail()
        return detail or ""

    @classmethod
    def from_error(cls, error: BaseException, plugin: str = "") -> Status:
        return cls(Code.ERROR, str(error), plugin=plugin, error=error)

    @classmethod
    def unschedulable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE, *reasons)

    @classmethod
    def unresolvable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_wait(self) -> bool:
        return self.code == Code.WAIT

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending."""
        return self.code in _REJECTIONS

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        if self.plugin == plugin:
            return self
        return Status(
            self.code, *self.reasons, plugin=plugin, error=self.error, detail=self._detail
        )

    def with_code(self, code: Code) -> Status:
        return Status(
            code, *self.reasons, plugin=self.plugin, error=self.error, detail=self._detail
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self.code == other.code and self.reasons == other.reasons

    def __hash__(self) -> int:
        return hash((self.code, self.reasons))

    def __repr__(self) -> str:
        plugin = f", plugin={self.plugin}" if self.plugin else ""
        return f"Status({self.code.label}, {self.message()!r}{plugin})"


SUCCESS = Status(Code.SUCCESS)
SKIP = Status(Code.SKIP)


def as_status(error: BaseException) -> Status:
    return Status.from_error(error)
