"""Hashable stand-ins for label selectors and pod affinity terms, equal when the two select the
same pods.

Selectors and terms are parsed afresh for every pod, so two pods of one workload hold equal but
distinct objects; the per-node counts (:mod:`.pod_counts`) and the term census
(:mod:`.term_census`) are shared between such pods through these keys. A key holds every field
that matching reads; requirements are sorted because a selector ANDs them.
"""

from __future__ import annotations

from kopf_scheduler.model.affinity import AffinityTerm
from kopf_scheduler.model.selectors import LabelSelector

SelectorKey = tuple[bool, tuple[tuple[str, str], ...], tuple[tuple[str, str, tuple[str, ...]], ...]]
TermKey = tuple[SelectorKey, str, tuple[str, ...], SelectorKey]


def selector_key(selector: LabelSelector) -> SelectorKey:
    return (
        selector.matches_nothing,
        tuple(sorted(selector.match_labels.items())),
        tuple(
            sorted(
                (requirement.key, requirement.operator, tuple(sorted(requirement.values)))
                for requirement in selector.requirements
            )
        ),
    )


def term_key(term: AffinityTerm) -> TermKey:
    return (
        selector_key(term.selector),
        term.topology_key,
        tuple(sorted(term.namespaces)),
        selector_key(term.namespace_selector),
    )
