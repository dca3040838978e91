"""Pod (anti-)affinity terms and topology spread constraints, parsed once per pod.

The parsed forms keep upstream's defaults: an affinity term without namespaces and without a
namespace selector applies to the pod's own namespace; ``matchLabelKeys`` of a spread constraint
are merged into its selector using the pod's own label values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kopf_scheduler.model.errors import InvalidObjectError, expect_object
from kopf_scheduler.model.selectors import IN, LabelSelector, Requirement

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"


@dataclass(slots=True, eq=False)
class AffinityTerm:
    """A pod (anti-)affinity term: which pods, in which namespaces, over which topology."""

    selector: LabelSelector
    topology_key: str
    namespaces: frozenset[str]
    namespace_selector: LabelSelector

    @classmethod
    def parse(cls, raw: Any, field: str, pod_namespace: str) -> AffinityTerm:
        raw = expect_object(raw, field, "a pod affinity term")
        topology_key = raw.get("topologyKey")
        if not isinstance(topology_key, str) or not topology_key:
            raise InvalidObjectError(f"{field}.topologyKey", "can not be empty")
        selector = LabelSelector.parse(raw.get("labelSelector"), f"{field}.labelSelector")
        namespaces_raw = raw.get("namespaces") or []
        if not isinstance(namespaces_raw, list) or not all(
            isinstance(n, str) for n in namespaces_raw
        ):
            raise InvalidObjectError(f"{field}.namespaces", "must be a list of strings")
        ns_selector_raw = raw.get("namespaceSelector")
        namespace_selector = LabelSelector.parse(ns_selector_raw, f"{field}.namespaceSelector")
        namespaces = frozenset(namespaces_raw)
        if not namespaces and ns_selector_raw is None:
            namespaces = frozenset({pod_namespace})
        return cls(selector, topology_key, namespaces, namespace_selector)

    def matches(
        self, pod_namespace: str, pod_labels: Mapping[str, str], namespace_labels: Mapping[str, str]
    ) -> bool:
        """Whether a pod in ``pod_namespace`` with ``pod_labels`` is selected by this term."""
        if pod_namespace in self.namespaces or self.namespace_selector.matches(namespace_labels):
            return self.selector.matches(pod_labels)
        return False


@dataclass(slots=True, eq=False)
class WeightedAffinityTerm:
    weight: int
    term: AffinityTerm

    @classmethod
    def parse(cls, raw: Any, field: str, pod_namespace: str) -> WeightedAffinityTerm:
        raw = expect_object(raw, field, "a weighted pod affinity term")
        weight = raw.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise InvalidObjectError(
                f"{field}.weight", f"must be in the range 1-100, got {weight!r}"
            )
        return cls(
            weight,
            AffinityTerm.parse(
                raw.get("podAffinityTerm"), f"{field}.podAffinityTerm", pod_namespace
            ),
        )


def parse_terms(raw: Any, field: str, pod_namespace: str) -> tuple[AffinityTerm, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidObjectError(field, "must be a list")
    return tuple(AffinityTerm.parse(t, f"{field}[{i}]", pod_namespace) for i, t in enumerate(raw))


def parse_weighted_terms(
    raw: Any, field: str, pod_namespace: str
) -> tuple[WeightedAffinityTerm, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidObjectError(field, "must be a list")
    return tuple(
        WeightedAffinityTerm.parse(t, f"{field}[{i}]", pod_namespace) for i, t in enumerate(raw)
    )


def parse_pod_affinity(
    raw: Mapping[str, Any], field: str, pod_namespace: str
) -> tuple[tuple[AffinityTerm, ...], tuple[WeightedAffinityTerm, ...]]:
    """The required and the preferred terms of a ``podAffinity`` or ``podAntiAffinity`` object
    at ``field``, which share one schema."""
    required = parse_terms(
        raw.get("requiredDuringSchedulingIgnoredDuringExecution"),
        f"{field}.requiredDuringSchedulingIgnoredDuringExecution",
        pod_namespace,
    )
    preferred = parse_weighted_terms(
        raw.get("preferredDuringSchedulingIgnoredDuringExecution"),
        f"{field}.preferredDuringSchedulingIgnoredDuringExecution",
        pod_namespace,
    )
    return required, preferred


@dataclass(slots=True, eq=False)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    @classmethod
    def parse(cls, raw: Any, field: str, pod_labels: Mapping[str, str]) -> TopologySpreadConstraint:
        raw = expect_object(raw, field, "a topology spread constraint")
        max_skew = raw.get("maxSkew")
        if not isinstance(max_skew, int) or isinstance(max_skew, bool) or max_skew < 1:
            raise InvalidObjectError(
                f"{field}.maxSkew", f"must be greater than zero, got {max_skew!r}"
            )
        topology_key = raw.get("topologyKey")
        if not isinstance(topology_key, str) or not topology_key:
            raise InvalidObjectError(f"{field}.topologyKey", "can not be empty")
        when = raw.get("whenUnsatisfiable")
        if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise InvalidObjectError(
                f"{field}.whenUnsatisfiable",
                f'supported values: "DoNotSchedule", "ScheduleAnyway"; got {when!r}',
            )
        min_domains = raw.get("minDomains")
        if min_domains is None:
            min_domains = 1
        elif not isinstance(min_domains, int) or isinstance(min_domains, bool) or min_domains < 1:
            raise InvalidObjectError(
                f"{field}.minDomains", f"must be greater than zero, got {min_domains!r}"
            )
        elif when != DO_NOT_SCHEDULE:
            raise InvalidObjectError(
                f"{field}.minDomains", "can only use minDomains if whenUnsatisfiable=DoNotSchedule"
            )
        affinity_policy = raw.get("nodeAffinityPolicy") or HONOR
        taints_policy = raw.get("nodeTaintsPolicy") or IGNORE
        for name, value in (
            ("nodeAffinityPolicy", affinity_policy),
            ("nodeTaintsPolicy", taints_policy),
        ):
            if value not in (HONOR, IGNORE):
                raise InvalidObjectError(
                    f"{field}.{name}", f'supported values: "Honor", "Ignore"; got {value!r}'
                )
        selector = LabelSelector.parse(raw.get("labelSelector"), f"{field}.labelSelector")
        match_label_keys = raw.get("matchLabelKeys") or []
        if not isinstance(match_label_keys, list):
            raise InvalidObjectError(f"{field}.matchLabelKeys", "must be a list of strings")
        for key in match_label_keys:
            if key in pod_labels:
                selector = selector.with_requirement(
                    Requirement(key, IN, frozenset({pod_labels[key]}))
                )
        return cls(
            max_skew, topology_key, when, selector, min_domains, affinity_policy, taints_policy
        )
