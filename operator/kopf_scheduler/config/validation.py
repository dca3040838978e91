"""The words every check of user input uses, so that one mistake reads the same wherever it is.

A configuration file and a decision record stored on a pod are both written by people (or
patched by anyone allowed to), and both are refused with one line that names the field and
what it must be: ``profiles[0].percentageOfNodesToScore: must be an integer, got '50'``. The
kinds of value here pair what a field accepts with how an error message names it, so that
"an integer" never accepts ``true`` in one place and does in another.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeGuard, TypeVar

SHOWN_CHARACTERS = 60
"""How much of a refused value an error message repeats before it cuts the value short."""

T = TypeVar("T")


@dataclass(frozen=True)
class Expected(Generic[T]):
    """A kind of value a field may hold: what it accepts and what error messages call it."""

    name: str
    accepts: Callable[[Any], TypeGuard[T]]

    def refusal(self, value: Any) -> str:
        """``must be <name>, got <value>``: why ``value`` is refused, for one error line."""
        return f"must be {self.name}, got {shown(value)}"


def _is_string(value: Any) -> TypeGuard[str]:
    return isinstance(value, str)


def _is_integer(value: Any) -> TypeGuard[int]:
    # YAML and JSON booleans arrive as ``bool``, which Python counts as an integer.
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_boolean(value: Any) -> TypeGuard[bool]:
    return isinstance(value, bool)


def _is_object(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, Mapping)


def _is_list(value: Any) -> TypeGuard[list[Any]]:
    return isinstance(value, list)


STRING = Expected("a string", _is_string)
INTEGER = Expected("an integer", _is_integer)
NUMBER = Expected("a number", _is_number)
BOOLEAN = Expected("true or false", _is_boolean)
OBJECT = Expected("an object", _is_object)
LIST = Expected("a list", _is_list)


def field_path(parent: str, key: str) -> str:
    """The path of ``key`` inside the field ``parent`` (``""`` for the document's top level)."""
    return f"{parent}.{key}" if parent else key


def shown(value: Any) -> str:
    """``value`` for an error message, cut short so the message stays one readable line."""
    text = repr(value)
    if len(text) <= SHOWN_CHARACTERS:
        return text
    return text[: SHOWN_CHARACTERS - 3] + "..."
