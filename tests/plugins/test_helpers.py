"""Tests for the shared score normalisation (integer arithmetic as upstream's helper package)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kopf_scheduler.framework.interfaces import MAX_NODE_SCORE, NodeScore
from kopf_scheduler.framework.scoring import default_normalize_score, go_div


def _normalize(scores: list[int], reverse: bool, max_priority: int = MAX_NODE_SCORE) -> list[int]:
    entries = [NodeScore(f"n{i}", score) for i, score in enumerate(scores)]
    status = default_normalize_score(max_priority, reverse, entries)
    assert status.is_success()
    return [entry.score for entry in entries]


@pytest.mark.parametrize(
    ("reverse", "scores", "expected"),
    [
        pytest.param(False, [1, 2, 3, 4], [25, 50, 75, 100], id="linear"),
        pytest.param(True, [1, 2, 3, 4], [75, 50, 25, 0], id="linear-reversed"),
        pytest.param(False, [1000, 10, 20, 30], [100, 1, 2, 3], id="truncates"),
        pytest.param(True, [1000, 10, 20, 30], [0, 99, 98, 97], id="truncates-reversed"),
        pytest.param(False, [1, 1, 1, 1], [100, 100, 100, 100], id="all-equal"),
        pytest.param(False, [1000, 1, 1, 1], [100, 0, 0, 0], id="small-ones-round-to-zero"),
        pytest.param(True, [0, 1, 1, 1], [100, 0, 0, 0], id="zero-reversed-is-best"),
        pytest.param(False, [0, 0, 0, 0], [0, 0, 0, 0], id="all-zero-untouched"),
        pytest.param(True, [0, 0, 0, 0], [100, 100, 100, 100], id="all-zero-reversed-max"),
        pytest.param(False, [], [], id="empty"),
        pytest.param(False, [-5, -1], [-5, -1], id="all-negative-left-alone"),
        pytest.param(False, [-3, 4], [-75, 100], id="negative-truncates-toward-zero"),
    ],
)
def test_default_normalize_score(reverse: bool, scores: list[int], expected: list[int]) -> None:
    assert _normalize(scores, reverse) == expected


def test_custom_max_priority() -> None:
    assert _normalize([1, 3], False, max_priority=10) == [3, 10]


@pytest.mark.parametrize(
    ("numerator", "denominator", "expected"),
    [
        pytest.param(7, 2, 3, id="positive"),
        pytest.param(-7, 2, -3, id="negative-numerator"),
        pytest.param(7, -2, -3, id="negative-denominator"),
        pytest.param(-7, -2, 3, id="both-negative"),
        pytest.param(0, 5, 0, id="zero"),
    ],
)
def test_go_div_truncates_toward_zero(numerator: int, denominator: int, expected: int) -> None:
    assert go_div(numerator, denominator) == expected


@given(st.lists(st.integers(min_value=0, max_value=10**12), min_size=1), st.booleans())
def test_normalized_scores_stay_in_range(scores: list[int], reverse: bool) -> None:
    result = _normalize(scores, reverse)
    assert all(0 <= score <= MAX_NODE_SCORE for score in result)
    if max(scores) > 0:
        best = result[scores.index(max(scores))]
        assert best == (0 if reverse else MAX_NODE_SCORE)
