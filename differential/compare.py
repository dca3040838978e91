"""Set our runs beside upstream's and classify every aspect.

The verdict is taken pod by pod (claim by claim), on the pods where our first run and
upstream's first run differ:

- ``divergence`` (a true one): upstream gave the pod the same outcome in every run, and none of
  our runs gave it that outcome;
- ``upstream-nondeterministic``: upstream's own runs disagree on the pod, so ours cannot be held
  to one of them;
- ``ours-nondeterministic``: upstream agrees with itself, and ours matched it in one run but not
  in another (timing decided, not the rules).

An aspect is ``identical`` when our first run equals upstream's first run, else it takes the
gravest verdict of its pods; a scenario takes the gravest verdict of its aspects. A pod upstream
is sure about is held to that even when upstream wavers on another pod of the same aspect.

A difference is confirmed only by reruns: :func:`next_rerun` says which side runs again while
a candidate divergence remains, upstream first (it may turn out to waver), then ours.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .normalise import ASPECTS, Outcome
from .record import OURS, UPSTREAM


class Verdict(StrEnum):
    IDENTICAL = "identical"
    UPSTREAM_NONDETERMINISTIC = "upstream-nondeterministic"
    OURS_NONDETERMINISTIC = "ours-nondeterministic"
    DIVERGENCE = "divergence"


_RANK = {verdict: rank for rank, verdict in enumerate(Verdict)}


def gravest(verdicts: Sequence[Verdict]) -> Verdict:
    return max(verdicts, key=_RANK.__getitem__, default=Verdict.IDENTICAL)


@dataclass
class KeyDifference:
    """One pod (or claim) on which our first run and upstream's first run differ."""

    key: str
    upstream: list[Any]
    """Upstream's distinct values for the key, in run order (``None``: absent)."""
    ours: list[Any]
    """Our distinct values for the key, in run order."""

    @property
    def verdict(self) -> Verdict:
        if len(self.upstream) > 1:
            return Verdict.UPSTREAM_NONDETERMINISTIC
        if canonical(self.upstream[0]) in {canonical(value) for value in self.ours}:
            return Verdict.OURS_NONDETERMINISTIC
        return Verdict.DIVERGENCE


@dataclass
class AspectResult:
    aspect: str
    verdict: Verdict
    upstream_runs: int
    ours_runs: int
    ours_seen_upstream: bool = True
    """Whether one of our runs equals one of upstream's runs on the whole aspect."""
    differences: list[KeyDifference] = field(default_factory=list)


@dataclass
class Comparison:
    aspects: dict[str, AspectResult]

    @property
    def verdict(self) -> Verdict:
        return gravest([r.verdict for r in self.aspects.values()])

    def of(self, verdict: Verdict) -> list[AspectResult]:
        return [result for result in self.aspects.values() if result.verdict == verdict]


def canonical(value: Any) -> str:
    """One text per value, whatever the order of its keys: how outcomes are told apart."""
    return json.dumps(value, sort_keys=True)


def _distinct(values: Sequence[Any]) -> list[Any]:
    seen: dict[str, Any] = {}
    for value in values:
        seen.setdefault(canonical(value), value)
    return list(seen.values())


def classify(upstream: Sequence[Outcome], ours: Sequence[Outcome], aspect: str) -> AspectResult:
    """The verdict on one aspect, from upstream's runs and ours (at least one of each)."""
    if not upstream or not ours:
        raise ValueError("classify needs at least one upstream run and one of ours")
    first = upstream[0].get(aspect, {})
    mine = ours[0].get(aspect, {})
    counts = (len(upstream), len(ours))
    if canonical(first) == canonical(mine):
        return AspectResult(aspect, Verdict.IDENTICAL, *counts)
    differences = [
        KeyDifference(
            key=key,
            upstream=_distinct([run.get(aspect, {}).get(key) for run in upstream]),
            ours=_distinct([run.get(aspect, {}).get(key) for run in ours]),
        )
        for key in sorted(set(first) | set(mine))
        if canonical(first.get(key)) != canonical(mine.get(key))
    ]
    seen = {canonical(run.get(aspect, {})) for run in upstream}
    return AspectResult(
        aspect,
        gravest([d.verdict for d in differences]),
        *counts,
        ours_seen_upstream=any(canonical(run.get(aspect, {})) in seen for run in ours),
        differences=differences,
    )


def compare(upstream: Sequence[Outcome], ours: Sequence[Outcome]) -> Comparison:
    return Comparison({aspect: classify(upstream, ours, aspect) for aspect in ASPECTS})


def next_rerun(
    upstream: Sequence[Outcome], ours: Sequence[Outcome], max_upstream: int, max_ours: int
) -> str | None:
    """The side to run again (:data:`UPSTREAM` or :data:`OURS`), or None: no candidate
    divergence is left, or no run."""
    if not compare(upstream, ours).of(Verdict.DIVERGENCE):
        return None
    if len(upstream) <= len(ours) and len(upstream) < max_upstream:
        return UPSTREAM
    if len(ours) < max_ours:
        return OURS
    if len(upstream) < max_upstream:
        return UPSTREAM
    return None
