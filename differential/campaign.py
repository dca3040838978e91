"""Run scenarios through both schedulers and keep what came out, one JSON line per scenario.

For each scenario: upstream once, ours once, then reruns while some pod still looks like a true
divergence (:func:`~differential.compare.next_rerun`): upstream first, up to ``upstream_runs``
runs in all, and ours up to ``ours_runs``. Every raw run record is kept beside the results, so
a finding can be examined and normalised again later. A scenario the cluster could not play
is kept as an error and the campaign goes on.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .compare import Comparison, compare, next_rerun
from .normalise import Outcome, normalise
from .record import OURS, UPSTREAM
from .runner import Lab, RunnerError
from .scenario import Scenario, from_document, to_document

DEFAULT_UPSTREAM_RUNS = 5
"""Upstream runs at most per scenario. Three were too few: kube-scheduler's timing races (which
pod's deletion lands first within a second) came out the same three times often enough that a
race read as a divergence of ours."""
DEFAULT_OURS_RUNS = 2
_SEEDS = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def parse_seeds(text: str) -> list[int]:
    """``"1-50"``, ``"7"`` or ``"1,4,10-12"`` -> the seeds, in order, each once."""
    seeds: list[int] = []
    for part in text.split(","):
        match = _SEEDS.match(part)
        if match is None:
            raise ValueError(f"seeds: {text!r} is not a list of numbers and ranges like 1-50,77")
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if last < first:
            raise ValueError(f"seeds: the range {part.strip()!r} runs backwards")
        seeds.extend(seed for seed in range(first, last + 1) if seed not in seeds)
    return seeds


@dataclass
class ScenarioResult:
    scenario: Scenario
    upstream: list[Outcome] = field(default_factory=list)
    ours: list[Outcome] = field(default_factory=list)
    unsettled: list[str] = field(default_factory=list)
    """Runs that hit the time limit before the cluster came to rest, e.g. ``"upstream 2"``."""
    seconds: float = 0.0
    error: str | None = None

    @property
    def comparison(self) -> Comparison:
        return compare(self.upstream, self.ours)

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": to_document(self.scenario),
            "upstream": self.upstream,
            "ours": self.ours,
            "unsettled": self.unsettled,
            "seconds": self.seconds,
            "error": self.error,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScenarioResult:
        return cls(
            scenario=from_document(data["scenario"], "results"),
            upstream=data["upstream"],
            ours=data["ours"],
            unsettled=data["unsettled"],
            seconds=data["seconds"],
            error=data["error"],
        )


def play(
    lab: Lab,
    scenario: Scenario,
    *,
    upstream_runs: int = DEFAULT_UPSTREAM_RUNS,
    ours_runs: int = DEFAULT_OURS_RUNS,
    records: Path | None = None,
    every_upstream_run: bool = False,
) -> ScenarioResult:
    """Upstream, ours, and the reruns a candidate divergence asks for, for one scenario.

    With ``every_upstream_run``, upstream plays all its ``upstream_runs`` before ours, whether
    or not ours differs: what it agrees on across them is what a saved case may record.
    """
    started = time.monotonic()
    result = ScenarioResult(scenario)
    names = scenario.pod_names()

    def run(side: str, attempt: int) -> Outcome:
        record = lab.run(scenario, side, attempt)
        if records is not None:
            record.save(records / scenario.name / f"{side}-{attempt}.json")
        if not record.settled:
            result.unsettled.append(f"{side} {attempt}")
        return normalise(record, names)

    try:
        with lab.stage(scenario):
            result.upstream.append(run(UPSTREAM, 1))
            while every_upstream_run and len(result.upstream) < upstream_runs:
                result.upstream.append(run(UPSTREAM, len(result.upstream) + 1))
            result.ours.append(run(OURS, 1))
            while side := next_rerun(result.upstream, result.ours, upstream_runs, ours_runs):
                runs = result.upstream if side == UPSTREAM else result.ours
                runs.append(run(side, len(runs) + 1))
    except RunnerError as error:
        result.error = str(error)
    result.seconds = round(time.monotonic() - started, 1)
    return result


def run_all(
    lab: Lab,
    scenarios: Iterable[Scenario],
    *,
    upstream_runs: int = DEFAULT_UPSTREAM_RUNS,
    ours_runs: int = DEFAULT_OURS_RUNS,
    out_dir: Path,
    on_result: Callable[[ScenarioResult], None] = lambda result: None,
) -> list[ScenarioResult]:
    """Play every scenario; append each result to ``out_dir/results.jsonl`` as it comes."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results_file = out_dir / "results.jsonl"
    results = []
    for scenario in scenarios:
        result = play(
            lab,
            scenario,
            upstream_runs=upstream_runs,
            ours_runs=ours_runs,
            records=out_dir / "runs",
        )
        with results_file.open("a") as stream:
            stream.write(json.dumps(result.to_json(), sort_keys=True) + "\n")
        results.append(result)
        on_result(result)
    return results


def load_results(path: Path) -> list[ScenarioResult]:
    results = []
    for line in path.read_text().splitlines():
        if line.strip():
            results.append(ScenarioResult.from_json(json.loads(line)))
    return results
