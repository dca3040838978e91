"""Saved cases: a reduced scenario that once showed a divergence, with upstream's outcome.

A case file is a scenario file with two more keys:

- ``finding``: what differed, and the upstream source that explains it;
- ``upstream``: the aspects of kube-scheduler v1.34.10's outcome that were the same in every
  run recorded for the case, in the normalised form of :mod:`differential.normalise`.

Checking a case runs only ours and holds it to the recorded aspects, so it needs neither
upstream's time nor its luck; ``--live`` runs upstream too, to see that the recording still
holds.

A case comes from ``reduce`` (a divergence shrunk) or from ``record`` (a scenario written by
hand to hold a behaviour ours already shares with upstream). :func:`refusal` says when the
runs behind a recording cannot make a case: a case must pass when it is written, and it must
hold the aspects it was made for.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .campaign import ScenarioResult
from .compare import AspectResult, Verdict, classify
from .normalise import ASPECTS, Outcome
from .scenario import Scenario, ScenarioError, from_document, to_document

CASES_DIR = Path(__file__).with_name("cases")


@dataclass
class Case:
    path: Path
    scenario: Scenario
    finding: str
    upstream: Outcome
    """Only the aspects upstream agreed on in every recorded run."""


def load_case(path: Path) -> Case:
    source = str(path)
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ScenarioError(f"{source}: cannot read: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise ScenarioError(f"{source}: not valid YAML: {' '.join(str(error).split())}") from None
    if not isinstance(document, Mapping):
        raise ScenarioError(f"{source}: a case must be a mapping")
    rest = dict(document)
    finding = rest.pop("finding", "")
    upstream = rest.pop("upstream", None)
    if not isinstance(upstream, Mapping) or not upstream:
        raise ScenarioError(f"{source}: upstream: must map aspects to upstream's outcome")
    unknown = sorted(set(upstream) - set(ASPECTS))
    if unknown:
        raise ScenarioError(
            f"{source}: upstream: unknown aspects {unknown}; known: {', '.join(ASPECTS)}"
        )
    if not all(isinstance(value, Mapping) for value in upstream.values()):
        raise ScenarioError(f"{source}: upstream: each aspect must be a mapping")
    return Case(
        path=path,
        scenario=from_document(rest, source),
        finding=str(finding),
        upstream={aspect: dict(value) for aspect, value in upstream.items()},
    )


def is_case(path: Path) -> bool:
    """Whether ``path`` holds a case (a scenario with a recorded ``upstream`` outcome)."""
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    return isinstance(document, Mapping) and "upstream" in document


def case_paths(arguments: Sequence[str] = ()) -> list[Path]:
    """The files named, or every ``*.yaml`` of :data:`CASES_DIR`."""
    if arguments:
        return [Path(argument) for argument in arguments]
    return sorted(CASES_DIR.glob("*.yaml"))


def agreed(upstream: Sequence[Outcome]) -> Outcome:
    """The aspects on which every upstream run had the same outcome."""
    return {
        aspect: upstream[0].get(aspect, {})
        for aspect in ASPECTS
        if all(run.get(aspect, {}) == upstream[0].get(aspect, {}) for run in upstream)
    }


def dump_case(scenario: Scenario, finding: str, upstream: Sequence[Outcome]) -> str:
    document: dict[str, Any] = {"finding": finding, "upstream": agreed(upstream)}
    document.update(to_document(scenario))
    return yaml.safe_dump(document, sort_keys=False, width=100)


def held_to(recorded: Outcome, ours: Outcome) -> list[AspectResult]:
    """Each aspect of ``recorded`` against ours: identical, or a divergence."""
    return [classify([recorded], [ours], aspect) for aspect in recorded]


def check_case(case: Case, ours: Outcome) -> list[AspectResult]:
    """Each recorded aspect against ours: identical, or a divergence."""
    return held_to(case.upstream, ours)


def failures(results: Sequence[AspectResult]) -> list[AspectResult]:
    return [result for result in results if result.verdict is not Verdict.IDENTICAL]


def refusal(result: ScenarioResult, aspects: Collection[str]) -> str | None:
    """Why ``result`` (every upstream run, and ours) cannot be recorded as a case meant to
    hold ``aspects``, in one line; None when it can.

    Refused: a scenario that could not be played or a run that did not settle (its outcome
    is where the time ran out, not where the schedulers left it); upstream agreeing with itself
    on none of ``aspects``; one of our runs differing from what upstream agreed on.
    """
    name = result.scenario.name
    if result.error is not None:
        return f"{name}: could not be played: {result.error}"
    if result.unsettled:
        return f"{name}: runs did not settle ({', '.join(result.unsettled)})"
    recorded = agreed(result.upstream)
    if not set(aspects) & set(recorded):
        runs = len(result.upstream)
        return (
            f"{name}: upstream did not agree with itself in {runs} runs on any of "
            f"{', '.join(a for a in ASPECTS if a in aspects)}: nothing to hold ours to"
        )
    for attempt, ours in enumerate(result.ours, start=1):
        differing = [r.aspect for r in failures(held_to(recorded, ours))]
        if differing:
            return (
                f"{name}: our run {attempt} differs from what upstream agreed on in "
                f"{', '.join(differing)}: the case would fail as soon as it is written"
            )
    return None
