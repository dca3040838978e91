"""Kubernetes resource quantities (``100m``, ``1.5``, ``2Gi``, ``1e3``), parsed exactly.

Quantities are kept as :class:`fractions.Fraction` so that no value is rounded while parsing; the
two conversions scheduling uses round up like ``resource.Quantity`` does upstream: CPU is compared
in millicores (``MilliValue``) and everything else in whole units (``Value``).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

from kopf_scheduler.model.errors import InvalidObjectError

_BINARY_SUFFIXES: dict[str, int] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_DECIMAL_SUFFIXES: dict[str, Fraction] = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}

_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<exponent>[eE][+-]?[0-9]+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)


class QuantityError(InvalidObjectError):
    """A resource quantity string does not follow the Kubernetes quantity grammar."""


@lru_cache(maxsize=4096)
def _parse(text: str) -> Fraction | None:
    match = _QUANTITY.match(text)
    if match is None:
        return None
    number = Fraction(match["number"])
    exponent = match["exponent"]
    if exponent is not None:
        power = int(exponent[1:])
        if abs(power) > 64:
            return None
        return number * Fraction(10) ** power
    suffix = match["suffix"] or ""
    if suffix in _BINARY_SUFFIXES:
        return number * _BINARY_SUFFIXES[suffix]
    return number * _DECIMAL_SUFFIXES[suffix]


def parse_quantity(value: object, field: str = "quantity") -> Fraction:
    """Parse a quantity given as a string or a number; raise :class:`QuantityError` otherwise."""
    if isinstance(value, bool):
        raise QuantityError(field, f"quantities must be strings or numbers, not {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(field, f"quantities must be finite, not {value!r}")
        return Fraction(str(value))
    if not isinstance(value, str):
        raise QuantityError(field, f"quantities must be strings or numbers, not {value!r}")
    parsed = _parse(value.strip()) if value.strip() == value else None
    if parsed is None:
        raise QuantityError(
            field,
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {value!r}",
        )
    return parsed


@lru_cache(maxsize=4096)
def _rounded_up(text: str, scale: int) -> int | None:
    """A well-formed quantity string times ``scale``, rounded up; None when it is malformed.

    A cluster repeats a handful of request strings over every pod, so the exact arithmetic is
    done once per string and scale.
    """
    parsed = _parse(text) if text.strip() == text else None
    return None if parsed is None else math.ceil(parsed * scale)


@lru_cache(maxsize=4096)
def is_well_formed_non_negative(text: str) -> bool:
    """Whether ``text`` is a quantity string of zero or more (a check that loading repeats for
    every resource of every pod, so answered once per string)."""
    parsed = _parse(text) if text.strip() == text else None
    return parsed is not None and parsed >= 0


def milli_value(value: object, field: str = "quantity") -> int:
    """The quantity in thousandths, rounded up (how CPU is compared)."""
    if type(value) is str and (milli := _rounded_up(value, 1000)) is not None:
        return milli
    return math.ceil(parse_quantity(value, field) * 1000)


def whole_value(value: object, field: str = "quantity") -> int:
    """The quantity in whole units, rounded up (how memory, storage and counts are compared)."""
    if type(value) is str and (whole := _rounded_up(value, 1)) is not None:
        return whole
    return math.ceil(parse_quantity(value, field))
