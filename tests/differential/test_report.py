"""docs/fidelity.md: the figures and a line per scenario that differs; the details page: every
difference with its values and the scenario that shows it."""

from __future__ import annotations

from differential.campaign import ScenarioResult
from differential.generator import generate
from differential.normalise import ASPECTS, Outcome
from differential.report import CampaignInfo, anchor, render, render_details, summary

INFO = CampaignInfo(
    command="make differential SEEDS=1-3",
    date="2026-11-25",
    seconds=3720,
    upstream_runs=3,
    ours_runs=2,
)


def outcome(node: str) -> Outcome:
    result: Outcome = {aspect: {} for aspect in ASPECTS}
    result["placements"] = {"p01-web": node}
    return result


def results() -> list[ScenarioResult]:
    one, two = outcome("node-1"), outcome("node-2")
    return [
        ScenarioResult(generate(1, "mixed"), [one], [one], seconds=40),
        ScenarioResult(generate(1, "preemption"), [one, one, one], [two, two], seconds=70),
        ScenarioResult(generate(2, "mixed"), [one, two], [two], unsettled=["kopf 1"], seconds=55),
        ScenarioResult(generate(3, "mixed"), [one, one], [two, one], seconds=50),
        ScenarioResult(generate(2, "preemption"), error="timed out waiting for kwok"),
    ]


DETAILS = "results/fidelity-campaign.md"


def test_the_figures() -> None:
    text = render(results(), INFO, DETAILS)
    assert "- Command: `make differential SEEDS=1-3`" in text
    assert (
        "- 2026-11-25: 5 scenarios in 1 h 2 min, up to 3 upstream and 2 runs of ours each" in text
    )
    assert (
        "**1 of 4 scenarios identical** in every aspect; 1 differs only where upstream disagrees "
        "with itself; 1 only where our runs disagree among themselves (and one matched "
        "upstream); 1 shows a true divergence; 1 could not be played." in text
    )
    assert (
        "| aspect | identical | upstream-nondeterministic | ours-nondeterministic | divergence |"
        in text
    )
    assert "| placements | 1 | 1 | 1 | 1 |" in text
    assert "| victims | 4 | 0 | 0 | 0 |" in text
    assert "mixed-2 (kopf 1)" in text


def test_the_summary_links_each_scenario_that_differs_to_its_details() -> None:
    text = render(results(), INFO, DETAILS)
    assert (
        "**True divergences**: [preemption-1: placements]"
        "(results/fidelity-campaign.md#preemption-1-placements)" in text
    )
    assert "**Ours-nondeterministic**: [mixed-3: placements](" in text
    assert "**Upstream-nondeterministic**: [mixed-2: placements](" in text
    assert '**Could not be played**: preemption-2 ("timed out waiting for kwok")' in text
    assert "name: preemption-1" not in text  # scenarios live on the details page


def test_anchors_follow_the_headings() -> None:
    assert anchor("preemption-34: placements, conditions, events") == (
        "preemption-34-placements-conditions-events"
    )


def test_a_divergence_comes_with_its_values_and_its_scenario() -> None:
    text = render_details(results(), INFO, "../fidelity.md")
    section = text.split("## True divergences", 1)[1].split("## Ours-nondeterministic")[0]
    assert "### preemption-1: placements" in section
    assert "`.venv/bin/python -m differential run preemption-1`" in section
    assert "- `p01-web`: divergence" in section
    assert "upstream (3 runs agree):\n  node-1\n  ours (2 runs agree):\n  node-2" in section
    assert "name: preemption-1\nseed: 1\nprofile: preemption" in section
    assert "mixed-1" not in section


def test_nondeterminism_and_errors_are_listed() -> None:
    text = render_details(results(), INFO, "../fidelity.md")
    ours_section = text.split("## Ours-nondeterministic", 1)[1].split("## Upstream-")[0]
    assert "### mixed-3: placements" in ours_section
    assert "ours, outcome 1 of 2 runs:\n  node-2\n  ours, outcome 2 of 2 runs:\n  node-1" in (
        ours_section
    )
    upstream_section = text.split("## Upstream-nondeterministic", 1)[1]
    assert "### mixed-2: placements" in upstream_section
    assert '- preemption-2: "timed out waiting for kwok"' in text


def test_summary_lines() -> None:
    assert [summary(r) for r in results()] == [
        "mixed-1: identical (1 upstream, 1 ours, 40s)",
        "preemption-1: divergence in placements (3 upstream, 2 ours, 70s)",
        "mixed-2: upstream-nondeterministic in placements (2 upstream, 1 ours, 55s, "
        "unsettled: kopf 1)",
        "mixed-3: ours-nondeterministic in placements (2 upstream, 2 ours, 50s)",
        "preemption-2: could not be played: timed out waiting for kwok",
    ]
