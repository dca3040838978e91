"""Race rates: each way a pod's outcome came out, counted per side, measured against upstream's
usual outcome; the two sides played in turn."""

from __future__ import annotations

import pytest
from differential.__main__ import main
from differential.generator import generate
from differential.normalise import Outcome
from differential.rates import measure, play_alternately, render
from differential.record import OURS, UPSTREAM

from tests.differential.fakes import FakeLab

FIRST = ["FailedScheduling: 0/3 nodes are available: 3 Insufficient cpu.", "Scheduled: to node-1"]
RETRIED = [FIRST[0], f"{FIRST[0]} preemption: not eligible", FIRST[1]]


def _events(value: list[str], other: list[str] | None = None) -> Outcome:
    outcome: Outcome = {"events": {"p01": value}, "placements": {"p01": "node-1"}}
    if other is not None:
        outcome["events"]["p02"] = other
    return outcome


def test_only_pods_whose_outcome_varies_are_counted() -> None:
    upstream = [_events(FIRST, FIRST), _events(FIRST, FIRST)]
    ours = [_events(FIRST, FIRST), _events(RETRIED, FIRST)]

    rates = measure(upstream, ours)

    assert [(rate.aspect, rate.key) for rate in rates] == [("events", "p01")]


def test_shares_are_measured_against_upstreams_usual_outcome() -> None:
    upstream = [_events(FIRST)] * 3 + [_events(RETRIED)]
    ours = [_events(RETRIED)] * 2 + [_events(FIRST)] * 2

    (rate,) = measure(upstream, ours, ["events"])

    assert [(o.value, o.upstream, o.ours) for o in rate.outcomes] == [
        (FIRST, 3, 2),
        (RETRIED, 1, 2),
    ]
    assert rate.upstream_disagreement == pytest.approx(0.25)
    assert rate.ours_disagreement == pytest.approx(0.5)


def test_an_outcome_only_ours_shows_counts_against_ours() -> None:
    upstream = [_events(FIRST)] * 2
    ours = [_events(FIRST), _events(RETRIED), _events(RETRIED), _events(RETRIED)]

    (rate,) = measure(upstream, ours, ["events"])

    assert rate.outcomes[0].value == FIRST
    assert rate.upstream_disagreement == 0.0
    assert rate.ours_disagreement == pytest.approx(0.75)


def test_a_pod_missing_from_some_runs_counts_as_its_own_outcome() -> None:
    upstream = [_events(FIRST, FIRST), _events(FIRST, FIRST)]
    ours = [_events(FIRST), _events(FIRST, FIRST)]

    (rate,) = measure(upstream, ours, ["events"])

    assert rate.key == "p02"
    assert [(o.value, o.upstream, o.ours) for o in rate.outcomes] == [
        (FIRST, 2, 1),
        (None, 0, 1),
    ]


def test_no_runs_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one run of each side"):
        measure([], [_events(FIRST)])


def test_the_report_gives_both_shares_and_every_outcome() -> None:
    upstream = [_events(FIRST)] * 3 + [_events(RETRIED)]
    ours = [_events(RETRIED)] * 2 + [_events(FIRST)] * 2

    text = render("preemption-39", 4, measure(upstream, ours, ["events"]))

    assert "### preemption-39: 4 runs of each side, in turn" in text
    assert "| `p01` | events | 25 % | 50 % |" in text
    assert f"| {'<br>'.join(FIRST)} (upstream's usual) | 3 | 2 |" in text
    assert f"| {'<br>'.join(RETRIED)} | 1 | 2 |" in text


def test_the_report_says_when_every_run_agreed() -> None:
    assert "came out the same" in render("s", 2, [])


def test_the_sides_are_played_in_turn_on_one_staging() -> None:
    lab = FakeLab(["u1", "u2", "u3"], ["o1", "o2", "o3"])
    saved: list[tuple[str, int]] = []

    upstream, ours = play_alternately(
        lab,
        generate(1, "preemption"),
        3,
        save=lambda record, attempt: saved.append((record.side, attempt)),
    )

    expected = [(UPSTREAM, 1), (OURS, 1), (UPSTREAM, 2), (OURS, 2), (UPSTREAM, 3), (OURS, 3)]
    assert lab.runs == expected
    assert saved == expected
    assert lab.staged == 1
    assert [run["placements"].get("p01-web") for run in upstream] == ["u1", "u2", "u3"]
    assert [run["placements"].get("p01-web") for run in ours] == ["o1", "o2", "o3"]


def test_fewer_than_two_runs_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rates", "preemption-1", "--runs", "1"]) == 2
    assert capsys.readouterr().err == "differential: error: --runs must be at least 2\n"
