"""Kubernetes quantities as CEL's ``quantity()`` reads them: ``resource.ParseQuantity``, exactly.

The scheduler's own quantity parser (:mod:`kopf_scheduler.model.quantity`) follows the grammar the
API server validates. CEL selectors hand ``quantity()`` arbitrary strings, and upstream's parser
is more lenient than its documented grammar: ``"Mi"``, ``"."`` and ``"-"`` are the quantity zero,
``"1."`` is one. What a selector accepts, and the error text of what it does not ("unable to
parse quantity's suffix" for ``"200K"``), must be upstream's, so this is that parser: sign,
digits, optional fraction, suffix (decimal SI, binary SI or an exponent), and the value rounded
up to the nanounit as ``ParseQuantity`` does.
"""

from __future__ import annotations

from fractions import Fraction

FORMAT_ERROR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NUMERIC_ERROR = "unable to parse numeric part of quantity"
SUFFIX_ERROR = "unable to parse quantity's suffix"

_DECIMAL_EXPONENTS = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_LETTERS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_MAX_BINARY = Fraction(2**63 - 1)
_NANO = 10**9
_LARGEST_EXPONENT = 1000
"""Exponents beyond this are refused as unparseable rather than expanded (``1e1000000`` would
take megabytes); upstream keeps them symbolic."""


def parse(text: str) -> Fraction:
    """The value of ``text``; raises ValueError with upstream's message."""
    if not text:
        raise ValueError(FORMAT_ERROR)
    if text == "0":
        return Fraction(0)
    negative, whole, fraction, suffix = _split(text)
    if suffix in _DECIMAL_EXPONENTS:
        base, exponent = 10, _DECIMAL_EXPONENTS[suffix]
    elif suffix in _BINARY_EXPONENTS:
        base, exponent = 2, _BINARY_EXPONENTS[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE" and _is_integer(suffix[1:]):
        base, exponent = 10, int(suffix[1:])
        if abs(exponent) > _LARGEST_EXPONENT:
            raise ValueError(NUMERIC_ERROR)
    else:
        raise ValueError(SUFFIX_ERROR)
    value = Fraction(int(whole or "0")) + (
        Fraction(int(fraction), 10 ** len(fraction)) if fraction else 0
    )
    value *= Fraction(base) ** exponent
    if value and (value * _NANO).denominator != 1:
        value = Fraction(-((-value.numerator * _NANO) // value.denominator), _NANO)
    if base == 2 and value > _MAX_BINARY:
        value = _MAX_BINARY
    return -value if negative else value


def is_valid(text: str) -> bool:
    try:
        parse(text)
    except ValueError:
        return False
    return True


def _is_integer(text: str) -> bool:
    body = text[1:] if text[:1] in ("+", "-") else text
    return bool(body) and all(c in _DIGITS for c in body)


def _split(text: str) -> tuple[bool, str, str, str]:
    """Sign, integer digits, fraction digits and suffix, as ``parseQuantityString`` cuts them."""
    end = len(text)
    position = 0
    negative = False
    if text[0] in "+-":
        negative = text[0] == "-"
        position = 1
    while position < end and text[position] == "0":
        position += 1
    if position >= end:
        return negative, "0", "", ""
    start = position
    while position < end and text[position] in _DIGITS:
        position += 1
    whole = text[start:position]
    fraction = ""
    if position < end and text[position] == ".":
        position += 1
        start = position
        while position < end and text[position] in _DIGITS:
            position += 1
        fraction = text[start:position]
    suffix_start = position
    while position < end and text[position] in _SUFFIX_LETTERS:
        position += 1
    if position < end and text[position] in "+-":
        position += 1
    while position < end and text[position] in _DIGITS:
        position += 1
    if position < end:
        raise ValueError(FORMAT_ERROR)
    return negative, whole, fraction, text[suffix_start:]
