"""Did-you-mean hints for names a person typed: plugin names, configuration fields, plugin args.

A configuration is refused for one wrong letter (``NodeResourceFit``), and the list of every
valid name does not tell which one was meant; the closest one does. Names are compared without
regard to case, since ``schedulername`` is as likely a slip as a transposed pair of letters.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.75
"""How alike (difflib's ratio, 0 to 1) a valid name must be to the typed one to be suggested."""


def closest(typed: str, valid: Iterable[str]) -> str | None:
    """The valid name most like ``typed``, or ``None`` when none is alike enough."""
    by_folded: dict[str, str] = {}
    for name in sorted(valid):
        by_folded.setdefault(name.casefold(), name)
    matches = difflib.get_close_matches(typed.casefold(), by_folded, n=1, cutoff=CUTOFF)
    return by_folded[matches[0]] if matches else None


def did_you_mean(typed: str, valid: Iterable[str]) -> str:
    """``"; did you mean 'X'?"`` to end an error message with, or ``""`` without a likely X."""
    suggestion = closest(typed, valid)
    return f"; did you mean {suggestion!r}?" if suggestion is not None else ""
