"""The comparator's verdicts, pod by pod, and which side it asks to run again."""

from __future__ import annotations

import pytest
from differential.compare import Verdict, classify, compare, next_rerun
from differential.normalise import ASPECTS, Outcome
from differential.record import OURS, UPSTREAM


def outcome(**placements: str) -> Outcome:
    result: Outcome = {aspect: {} for aspect in ASPECTS}
    result["placements"] = dict(placements)
    return result


A = outcome(p1="node-a", p2="node-b")
B = outcome(p1="node-b", p2="node-b")
C = outcome(p1="node-c", p2="node-b")


@pytest.mark.parametrize(
    ("upstream", "ours", "verdict", "seen"),
    [
        pytest.param([A], [A], Verdict.IDENTICAL, True, id="identical-one-run"),
        pytest.param([A, B], [A], Verdict.IDENTICAL, True, id="identical-to-the-first-run"),
        pytest.param([A, A], [B], Verdict.DIVERGENCE, False, id="upstream-agrees-ours-differs"),
        pytest.param([A, A, A], [B, C], Verdict.DIVERGENCE, False, id="ours-never-matches"),
        pytest.param([A, B], [B], Verdict.UPSTREAM_NONDETERMINISTIC, True, id="upstreams-other"),
        pytest.param([A, B], [C], Verdict.UPSTREAM_NONDETERMINISTIC, False, id="neither"),
        pytest.param([A, A], [B, A], Verdict.OURS_NONDETERMINISTIC, True, id="ours-matched-once"),
    ],
)
def test_classify(
    upstream: list[Outcome], ours: list[Outcome], verdict: Verdict, seen: bool
) -> None:
    result = classify(upstream, ours, "placements")
    assert result.verdict is verdict
    assert result.ours_seen_upstream is seen
    assert (result.upstream_runs, result.ours_runs) == (len(upstream), len(ours))


def test_differences_name_the_pods_and_every_value_of_each_side() -> None:
    result = classify([A, B], [C, A], "placements")
    assert [(d.key, d.upstream, d.ours) for d in result.differences] == [
        ("p1", ["node-a", "node-b"], ["node-c", "node-a"])
    ]


def test_a_pod_upstream_is_sure_about_is_held_to_it_while_upstream_wavers_on_another() -> None:
    ours = outcome(p1="node-b", p2="node-c")
    result = classify([A, B], [ours], "placements")
    assert result.verdict is Verdict.DIVERGENCE
    assert [(d.key, d.verdict) for d in result.differences] == [
        ("p1", Verdict.UPSTREAM_NONDETERMINISTIC),
        ("p2", Verdict.DIVERGENCE),
    ]


def test_a_key_only_one_side_has_is_a_difference() -> None:
    ours = outcome(p1="node-a", p2="node-b", p3="pending")
    result = classify([A, A], [ours], "placements")
    assert [(d.key, d.upstream, d.ours) for d in result.differences] == [
        ("p3", [None], ["pending"])
    ]


def test_the_scenario_verdict_is_the_gravest_aspect() -> None:
    ours = outcome(p1="node-b", p2="node-b")
    ours["victims"] = {"r1": "deleted"}
    upstream_runs = [outcome(p1="node-a", p2="node-b"), outcome(p1="node-b", p2="node-b")]
    comparison = compare(upstream_runs, [ours])
    assert comparison.aspects["placements"].verdict is Verdict.UPSTREAM_NONDETERMINISTIC
    assert comparison.aspects["victims"].verdict is Verdict.DIVERGENCE
    assert comparison.verdict is Verdict.DIVERGENCE
    assert [r.aspect for r in comparison.of(Verdict.IDENTICAL)] == [
        a for a in ASPECTS if a not in ("placements", "victims")
    ]


def test_classify_needs_runs_of_both() -> None:
    with pytest.raises(ValueError, match="at least one upstream run and one of ours"):
        classify([], [A], "placements")


@pytest.mark.parametrize(
    ("upstream", "ours", "expected"),
    [
        pytest.param([A], [A], None, id="identical"),
        pytest.param([A], [B], UPSTREAM, id="first-difference-upstream-first"),
        pytest.param([A, A], [B], OURS, id="then-ours"),
        pytest.param([A, A], [B, B], UPSTREAM, id="then-upstream-again"),
        pytest.param([A, A, A], [B, B], None, id="out-of-runs"),
        pytest.param([A, B], [C], None, id="upstream-wavers"),
        pytest.param([A, A], [B, A], None, id="ours-matched-once"),
    ],
)
def test_next_rerun(upstream: list[Outcome], ours: list[Outcome], expected: str | None) -> None:
    assert next_rerun(upstream, ours, max_upstream=3, max_ours=2) == expected
