"""Score arithmetic the plugins share.

Several score plugins rescale their raw per-node numbers onto ``[0, max_priority]`` the same way
upstream does in its ``helper`` package. Keeping that in one place guarantees identical integer
rounding (Go's truncating division) everywhere, which matters because a one-point difference can
change which node wins.
"""

from __future__ import annotations

from kopf_scheduler.framework.interfaces import NodeScore
from kopf_scheduler.framework.status import SUCCESS, Status


def go_div(numerator: int, denominator: int) -> int:
    """Integer division truncating toward zero, as Go's ``/`` on integers does."""
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator >= 0) == (denominator >= 0) else -quotient


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> Status:
    """Rescale ``scores`` in place so the highest becomes ``max_priority``.

    Each score becomes ``max_priority * score // highest`` (truncating toward zero); with
    ``reverse`` it then becomes ``max_priority - that``. The highest is taken as at least 0, so
    when every score is 0 (or below) nothing is divided: the scores are left alone, or, with
    ``reverse``, all set to ``max_priority``.
    """
    highest = max((entry.score for entry in scores), default=0)
    highest = max(highest, 0)
    if highest == 0:
        if reverse:
            for entry in scores:
                entry.score = max_priority
        return SUCCESS
    for entry in scores:
        value = go_div(max_priority * entry.score, highest)
        if reverse:
            value = max_priority - value
        entry.score = value
    return SUCCESS
