"""Saved cases: scenario plus the outcome upstream agreed on, checked against ours."""

from __future__ import annotations

from pathlib import Path

import pytest
from differential.cases import (
    Case,
    agreed,
    case_paths,
    check_case,
    dump_case,
    failures,
    is_case,
    load_case,
)
from differential.compare import Verdict
from differential.generator import generate
from differential.normalise import ASPECTS, Outcome
from differential.scenario import ScenarioError, dump, to_document


def outcome(node: str, victims: dict[str, str] | None = None) -> Outcome:
    result: Outcome = {aspect: {} for aspect in ASPECTS}
    result["placements"] = {"p01": node}
    result["victims"] = dict(victims or {})
    return result


def test_only_what_every_upstream_run_agreed_on_is_recorded() -> None:
    runs = [outcome("node-1", {"r1": "deleted"}), outcome("node-2", {"r1": "deleted"})]
    recorded = agreed(runs)
    assert "placements" not in recorded
    assert recorded["victims"] == {"r1": "deleted"}


def test_a_case_round_trips_and_is_told_from_a_scenario(tmp_path: Path) -> None:
    scenario = generate(3, "preemption")
    path = tmp_path / "case.yaml"
    path.write_text(dump_case(scenario, "ours deletes once", [outcome("node-1")] * 2))
    plain = tmp_path / "scenario.yaml"
    plain.write_text(dump(scenario))
    case = load_case(path)
    assert to_document(case.scenario) == to_document(scenario)
    assert case.finding == "ours deletes once"
    assert case.upstream["placements"] == {"p01": "node-1"}
    assert is_case(path)
    assert not is_case(plain)


@pytest.mark.parametrize(
    ("ours", "failed"),
    [
        pytest.param(outcome("node-1"), [], id="matches"),
        pytest.param(outcome("node-2"), ["placements"], id="other-node"),
        pytest.param(outcome("node-1", {"r9": "deleted"}), ["victims"], id="extra-victim"),
    ],
)
def test_a_case_holds_ours_to_the_recording(ours: Outcome, failed: list[str]) -> None:
    case = Case(Path("case.yaml"), generate(1, "mixed"), "", agreed([outcome("node-1")]))
    results = check_case(case, ours)
    assert [r.aspect for r in failures(results)] == failed
    assert all(r.verdict in (Verdict.IDENTICAL, Verdict.DIVERGENCE) for r in results)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("- a list\n", "a case must be a mapping", id="not-a-mapping"),
        pytest.param("name: x\nwaves: []\n", "upstream: must map aspects", id="no-upstream"),
        pytest.param(
            "name: x\nwaves: []\nupstream: {speed: {}}\n",
            r"unknown aspects \['speed'\]",
            id="aspect",
        ),
        pytest.param("name: [\n", "not valid YAML", id="yaml"),
    ],
)
def test_a_broken_case_is_reported_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError, match=message) as error:
        load_case(path)
    assert "\n" not in str(error.value)


def test_the_saved_cases_load() -> None:
    for path in case_paths():
        load_case(path)
