"""Campaign bookkeeping: seeds, upstream reruns, errors, results that survive a file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from differential.campaign import (
    DEFAULT_OURS_RUNS,
    DEFAULT_UPSTREAM_RUNS,
    load_results,
    parse_seeds,
    play,
    run_all,
)
from differential.compare import Verdict
from differential.generator import generate
from differential.record import OURS, UPSTREAM
from differential.scenario import Scenario

from tests.differential.fakes import FakeLab


@pytest.mark.parametrize(
    ("text", "seeds"),
    [
        pytest.param("1-5", [1, 2, 3, 4, 5], id="range"),
        pytest.param("7", [7], id="one"),
        pytest.param("1,4,10-12", [1, 4, 10, 11, 12], id="list"),
        pytest.param("3-4,4,2", [3, 4, 2], id="each-once"),
    ],
)
def test_parse_seeds(text: str, seeds: list[int]) -> None:
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["", "a-b", "5-1", "1-2-3"])
def test_bad_seeds_are_a_clear_error(text: str) -> None:
    with pytest.raises(ValueError, match="seeds: "):
        parse_seeds(text)


def scenario() -> Scenario:
    return generate(1, "mixed")


def play_with(lab: FakeLab, records: Path | None = None) -> Any:
    return play(lab, scenario(), upstream_runs=3, ours_runs=2, records=records)  # type: ignore[arg-type]


def test_an_identical_outcome_needs_one_upstream_run() -> None:
    lab = FakeLab(["node-1"], ["node-1"])
    result = play_with(lab)
    assert lab.runs == [(UPSTREAM, 1), (OURS, 1)]
    assert result.comparison.verdict is Verdict.IDENTICAL


def test_a_difference_reruns_upstream_until_it_disagrees_with_itself() -> None:
    lab = FakeLab(["node-1", "node-2", "node-1"], ["node-3"])
    result = play_with(lab)
    assert lab.runs == [(UPSTREAM, 1), (OURS, 1), (UPSTREAM, 2)]
    assert result.comparison.aspects["placements"].verdict is Verdict.UPSTREAM_NONDETERMINISTIC


def test_ours_matching_upstream_on_its_rerun_is_ours_nondeterministic() -> None:
    lab = FakeLab(["node-1"] * 3, ["node-3", "node-1"])
    result = play_with(lab)
    assert lab.runs == [(UPSTREAM, 1), (OURS, 1), (UPSTREAM, 2), (OURS, 2)]
    assert result.comparison.aspects["placements"].verdict is Verdict.OURS_NONDETERMINISTIC


def test_a_difference_both_keep_to_is_a_divergence() -> None:
    lab = FakeLab(["node-1"] * 3, ["node-3"] * 2)
    result = play_with(lab)
    assert lab.runs == [(UPSTREAM, 1), (OURS, 1), (UPSTREAM, 2), (OURS, 2), (UPSTREAM, 3)]
    assert result.comparison.aspects["placements"].verdict is Verdict.DIVERGENCE
    assert lab.staged == 1


def test_unsettled_runs_are_kept_and_records_saved(tmp_path: Path) -> None:
    result = play_with(FakeLab(["node-1"], ["node-1"]), records=tmp_path)
    assert result.unsettled == ["kopf 1"]
    saved = sorted(p.name for p in (tmp_path / "mixed-1").iterdir())
    assert saved == ["kopf-1.json", "upstream-1.json"]


def test_a_scenario_the_cluster_cannot_play_is_an_error_not_a_crash() -> None:
    result = play_with(FakeLab(["node-1"], ["node-1"], fail=OURS))
    assert result.error == "timed out after 60s waiting for kwok"


def test_results_survive_their_file(tmp_path: Path) -> None:
    lab = FakeLab(["node-1"] * DEFAULT_UPSTREAM_RUNS, ["node-3"] * DEFAULT_OURS_RUNS)
    results = run_all(
        lab,  # type: ignore[arg-type]
        [scenario(), generate(2, "preemption")],
        out_dir=tmp_path,
    )
    loaded = load_results(tmp_path / "results.jsonl")
    assert [r.to_json() for r in loaded] == [r.to_json() for r in results]
    assert [r.comparison.verdict for r in loaded] == [Verdict.DIVERGENCE, Verdict.DIVERGENCE]
