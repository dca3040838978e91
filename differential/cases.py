"""Saved cases: a reduced scenario that once showed a divergence, with upstream's outcome.

A case file is a scenario file with two more keys:

- ``finding``: what differed, and the upstream source that explains it;
- ``upstream``: the aspects of kube-scheduler v1.34.10's outcome that were the same in every
  run recorded for the case, in the normalised form of :mod:`differential.normalise`.

Checking a case runs only ours and holds it to the recorded aspects, so it needs neither
upstream's time nor its luck; ``--live`` runs upstream too, to see that the recording still
holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

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


def check_case(case: Case, ours: Outcome) -> list[AspectResult]:
    """Each recorded aspect against ours: identical, or a divergence."""
    return [classify([case.upstream], [ours], aspect) for aspect in case.upstream]


def failures(results: Sequence[AspectResult]) -> list[AspectResult]:
    return [result for result in results if result.verdict is not Verdict.IDENTICAL]
