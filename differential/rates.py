"""How often each way a race can go comes out, on each side: ``python -m differential rates``.

A campaign tells a difference that timing decides from one a rule decides by re-running a
scenario a few times. That is enough to name a race, not to say how often each side lands on
each side of it, and whether ours lands on the other side more often than kube-scheduler
disagrees with itself. ``rates`` plays one scenario many times with each scheduler, in turn
(upstream, ours, upstream, ...) so that the machine's load falls on both alike, and counts, for
every pod and aspect whose outcome is not the same in all runs, how many runs of each side came
out each way.

Two shares are worked out per pod and aspect, both against upstream's most frequent outcome (its
*usual* outcome, the one a saved case would hold):

- upstream's disagreement: the share of upstream's runs that came out otherwise;
- ours' disagreement: the share of our runs that came out otherwise.

Ours is as faithful as upstream is stable where its share is no higher than upstream's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .compare import canonical
from .normalise import ASPECTS, Outcome, normalise
from .record import OURS, UPSTREAM, RunRecord
from .scenario import Scenario


class Playground(Protocol):
    """What ``rates`` needs of :class:`~differential.runner.Lab`."""

    def stage(self, scenario: Scenario) -> Any: ...

    def run(self, scenario: Scenario, side_name: str, attempt: int) -> RunRecord: ...


@dataclass
class OutcomeCount:
    """One way a pod's aspect came out, and in how many runs of each side."""

    value: Any
    upstream: int
    ours: int


@dataclass
class KeyRates:
    """The outcomes of one pod (or claim) in one aspect over all runs of both sides."""

    aspect: str
    key: str
    outcomes: list[OutcomeCount]
    """Upstream's usual outcome first, then the others by how often they came out overall."""

    @property
    def upstream_runs(self) -> int:
        return sum(outcome.upstream for outcome in self.outcomes)

    @property
    def ours_runs(self) -> int:
        return sum(outcome.ours for outcome in self.outcomes)

    @property
    def upstream_disagreement(self) -> float:
        """The share of upstream's runs that differ from upstream's usual outcome."""
        runs = self.upstream_runs
        return (runs - self.outcomes[0].upstream) / runs if runs else 0.0

    @property
    def ours_disagreement(self) -> float:
        """The share of our runs that differ from upstream's usual outcome."""
        runs = self.ours_runs
        return (runs - self.outcomes[0].ours) / runs if runs else 0.0


def measure(
    upstream: Sequence[Outcome], ours: Sequence[Outcome], aspects: Iterable[str] = ASPECTS
) -> list[KeyRates]:
    """Every pod and aspect whose outcome is not the same in all runs of both sides."""
    if not upstream or not ours:
        raise ValueError("rates need at least one run of each side")
    found: list[KeyRates] = []
    for aspect in aspects:
        keys = sorted({key for run in (*upstream, *ours) for key in run.get(aspect, {})})
        for key in keys:
            counts: dict[str, OutcomeCount] = {}
            for side, runs in ((UPSTREAM, upstream), (OURS, ours)):
                for run in runs:
                    value = run.get(aspect, {}).get(key)
                    count = counts.setdefault(canonical(value), OutcomeCount(value, 0, 0))
                    if side == UPSTREAM:
                        count.upstream += 1
                    else:
                        count.ours += 1
            if len(counts) == 1:
                continue
            ordered = sorted(counts.values(), key=lambda c: (-c.upstream, -(c.upstream + c.ours)))
            found.append(KeyRates(aspect, key, ordered))
    return found


def play_alternately(
    lab: Playground,
    scenario: Scenario,
    runs: int,
    *,
    save: Callable[[RunRecord, int], None] = lambda record, attempt: None,
) -> tuple[list[Outcome], list[Outcome]]:
    """``runs`` runs of each side, upstream's and ours in turn; their outcomes, side by side."""
    names = scenario.pod_names()
    upstream: list[Outcome] = []
    ours: list[Outcome] = []
    with lab.stage(scenario):
        for attempt in range(1, runs + 1):
            for side, outcomes in ((UPSTREAM, upstream), (OURS, ours)):
                record = lab.run(scenario, side, attempt)
                save(record, attempt)
                outcomes.append(normalise(record, names))
    return upstream, ours


def _percent(share: float) -> str:
    return f"{share * 100:.0f} %"


def _describe(value: Any) -> str:
    if isinstance(value, list):
        return "<br>".join(str(item) for item in value) or "(none)"
    return "(none)" if value is None else str(value)


def render(scenario: str, runs: int, rates: Sequence[KeyRates]) -> str:
    """A Markdown section: per pod and aspect, each outcome's count per side and both shares."""
    lines = [f"### {scenario}: {runs} runs of each side, in turn", ""]
    if not rates:
        lines.append("Every run of both sides came out the same in every aspect.")
        return "\n".join(lines) + "\n"
    lines += [
        "| pod | aspect | upstream's disagreement | ours' disagreement |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| `{rate.key}` | {rate.aspect} | {_percent(rate.upstream_disagreement)} "
        f"| {_percent(rate.ours_disagreement)} |"
        for rate in rates
    ]
    for rate in rates:
        lines += ["", f"`{rate.key}`, {rate.aspect}:", "", "| outcome | upstream | ours |"]
        lines.append("|---|---|---|")
        for index, outcome in enumerate(rate.outcomes):
            usual = " (upstream's usual)" if index == 0 else ""
            lines.append(
                f"| {_describe(outcome.value)}{usual} | {outcome.upstream} | {outcome.ours} |"
            )
    return "\n".join(lines) + "\n"


def to_json(scenario: str, upstream: Sequence[Outcome], ours: Sequence[Outcome]) -> str:
    """Every run's outcome, so that the shares can be worked out again (``measure``)."""
    return json.dumps(
        {"scenario": scenario, "upstream": list(upstream), "ours": list(ours)},
        sort_keys=True,
        indent=1,
    )
