"""``record``: a scenario becomes a case only when upstream agrees and ours already matches."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from differential.campaign import ScenarioResult
from differential.cases import check_case, failures, load_case, refusal
from differential.generator import generate
from differential.normalise import ASPECTS, Outcome, normalise
from differential.record import OURS, UPSTREAM, RunRecord
from differential.runner import RunnerError
from differential.scenario import Scenario

from differential import __main__ as cli
from tests.builders import make_pod


class FakeLab:
    """Plays nothing: run ``n`` of a side binds p01-web to the ``n``-th node scripted for it."""

    def __init__(
        self, upstream_nodes: list[str], our_nodes: list[str], unsettled: str | None = None
    ) -> None:
        self.nodes = {UPSTREAM: list(upstream_nodes), OURS: list(our_nodes)}
        self.unsettled = unsettled
        self.runs: list[tuple[str, int]] = []

    def __enter__(self) -> FakeLab:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    @contextlib.contextmanager
    def stage(self, scenario: Scenario) -> Iterator[None]:
        yield

    def run(self, scenario: Scenario, side: str, attempt: int) -> RunRecord:
        self.runs.append((side, attempt))
        namespace = f"ns-{side}-{attempt}"
        pod = make_pod("p01-web", namespace).node(self.nodes[side][attempt - 1]).obj()
        return RunRecord(
            scenario=scenario.name,
            side=side,
            scheduler_name="s",
            namespace=namespace,
            settled=f"{side} {attempt}" != self.unsettled,
            seconds=1.0,
            pods=[pod],
        )


def record(monkeypatch: pytest.MonkeyPatch, lab: FakeLab, out: Path, *aspects: str) -> int:
    """``python -m differential record mixed-1`` on ``lab``; the exit code."""
    monkeypatch.setattr(cli, "_lab", lambda args, out_dir: lab)
    argv = ["record", "mixed-1", "--out", str(out), "--finding", "ours deleted once"]
    argv += ["--upstream-runs", "3"]  # the fake lab plays three upstream runs
    argv += [f"--aspect={aspect}" for aspect in aspects]
    return cli.main(argv)


def test_every_upstream_run_is_played_and_only_its_agreement_recorded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lab = FakeLab(["node-1"] * 3, ["node-1"])
    out = tmp_path / "case.yaml"
    code = record(monkeypatch, lab, out, "placements")
    assert code == 0
    # Ours matching upstream's first run does not spare upstream's other runs.
    assert lab.runs == [(UPSTREAM, 1), (UPSTREAM, 2), (UPSTREAM, 3), (OURS, 1)]
    case = load_case(out)
    assert case.finding == "ours deleted once"
    assert case.scenario.name == "mixed-1"
    assert case.upstream["placements"]["p01-web"] == "node-1"
    ours = normalise(lab.run(case.scenario, OURS, 1), case.scenario.pod_names())
    assert failures(check_case(case, ours)) == []


def test_an_aspect_upstream_wavered_on_is_left_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = FakeLab(["node-1", "node-2", "node-1"], ["node-1"])
    out = tmp_path / "case.yaml"
    code = record(monkeypatch, lab, out, "placements", "victims")
    assert code == 0
    assert "placements" not in load_case(out).upstream
    assert "not held (upstream disagreed with itself): placements" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("lab", "aspects", "reason"),
    [
        pytest.param(
            FakeLab(["node-1"] * 3, ["node-2"] * 2),
            ["victims"],
            "our run 1 differs from what upstream agreed on in placements",
            id="ours-differs",
        ),
        pytest.param(
            FakeLab(["node-1", "node-2", "node-1"], ["node-1"]),
            ["placements"],
            "upstream did not agree with itself in 3 runs on any of placements",
            id="upstream-wavers",
        ),
        pytest.param(
            FakeLab(["node-1"] * 3, ["node-1"], unsettled="upstream 2"),
            ["placements"],
            "runs did not settle (upstream 2)",
            id="unsettled",
        ),
    ],
)
def test_a_recording_that_cannot_make_a_case_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    lab: FakeLab,
    aspects: list[str],
    reason: str,
) -> None:
    out = tmp_path / "case.yaml"
    code = record(monkeypatch, lab, out, *aspects)
    assert code == 1
    assert not out.exists()
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("differential: record: mixed-1: ")
    assert reason in line
    assert line.endswith("; no case written")


def outcome(node: str) -> Outcome:
    result: Outcome = {aspect: {} for aspect in ASPECTS}
    result["placements"] = {"p01": node}
    return result


def test_ours_wavering_on_a_rerun_is_refused_too() -> None:
    result = ScenarioResult(
        generate(1, "mixed"),
        upstream=[outcome("node-1")] * 3,
        ours=[outcome("node-1"), outcome("node-2")],
    )
    reason = refusal(result, {"placements"})
    assert reason is not None and "our run 2 differs" in reason


def test_a_scenario_that_could_not_be_played_is_refused() -> None:
    result = ScenarioResult(generate(1, "mixed"), error=str(RunnerError("kwok is gone")))
    assert refusal(result, {"placements"}) == "mixed-1: could not be played: kwok is gone"
