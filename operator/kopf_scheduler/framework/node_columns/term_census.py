"""The pod affinity terms that existing pods carry, each distinct term once, with where it occurs.

InterPodAffinity matches the terms of existing pods against the incoming pod: their required
anti-affinity terms in PreFilter, their required and preferred (anti-)affinity terms in PreScore.
Walking every such pod at every attempt costs time proportional to the cluster's pods, yet pods
of one workload carry equal terms. The census keeps each distinct (role, weight, term) once,
with how many times it occurs on each node position, so an attempt evaluates every distinct term
once against the incoming pod and adds up the occurrences of the ones that match.

The census is built on first use and then kept in step with the mirror: a replaced row is
brought up to date by the pods that came and went (found by identity, a lookup per pod, since
the new NodeInfo shares the objects of the pods that stayed), a layout rebuild starts over.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum
from typing import TYPE_CHECKING

import numpy as np

from kopf_scheduler.framework.node_columns.mirror import IntArray, NodeMirror
from kopf_scheduler.framework.node_columns.value_keys import TermKey, term_key

if TYPE_CHECKING:
    from kopf_scheduler.cache.node_info import NodeInfo
    from kopf_scheduler.model.affinity import AffinityTerm
    from kopf_scheduler.model.pod import Pod


class Role(Enum):
    REQUIRED_AFFINITY = "required affinity"
    REQUIRED_ANTI_AFFINITY = "required anti-affinity"
    PREFERRED_AFFINITY = "preferred affinity"
    PREFERRED_ANTI_AFFINITY = "preferred anti-affinity"


CensusKey = tuple[Role, int, TermKey]
"""(role, weight (0 for required terms), term)."""


class CensusEntry:
    """One distinct term and how many times existing pods carry it, by node position."""

    __slots__ = ("_arrays", "occurrences", "role", "term", "weight")

    def __init__(self, role: Role, weight: int, term: AffinityTerm) -> None:
        self.role = role
        self.weight = weight
        self.term = term
        self.occurrences: dict[int, int] = {}
        """Node position -> how many times the term occurs on it (positive)."""
        self._arrays: tuple[IntArray, IntArray] | None = None

    def arrays(self) -> tuple[IntArray, IntArray]:
        """``(positions, occurrences)`` as arrays."""
        if self._arrays is None:
            count = len(self.occurrences)
            self._arrays = (
                np.fromiter(self.occurrences.keys(), dtype=np.int64, count=count),
                np.fromiter(self.occurrences.values(), dtype=np.int64, count=count),
            )
        return self._arrays

    def set(self, position: int, occurrences: int) -> None:
        if self.occurrences.get(position, 0) == occurrences:
            return
        if occurrences:
            self.occurrences[position] = occurrences
        else:
            self.occurrences.pop(position, None)
        self._arrays = None


PodTerms = tuple[tuple[CensusKey, "AffinityTerm"], ...]
"""A pod's terms with their census keys, in the order the pod carries them."""


def _pod_terms(pod: Pod) -> PodTerms:
    terms: list[tuple[CensusKey, AffinityTerm]] = []
    for term in pod.pod_affinity_required:
        terms.append(((Role.REQUIRED_AFFINITY, 0, term_key(term)), term))
    for term in pod.anti_affinity_required:
        terms.append(((Role.REQUIRED_ANTI_AFFINITY, 0, term_key(term)), term))
    for weighted in pod.affinity_preferred:
        key = (Role.PREFERRED_AFFINITY, weighted.weight, term_key(weighted.term))
        terms.append((key, weighted.term))
    for weighted in pod.anti_affinity_preferred:
        key = (Role.PREFERRED_ANTI_AFFINITY, weighted.weight, term_key(weighted.term))
        terms.append((key, weighted.term))
    return tuple(terms)


class _Row:
    """One node position's pods with affinity terms, each with its terms, and the occurrences
    of every key among them.

    Pods are held by identity: a NodeInfo that replaces the row's old one shares the objects of
    the pods that stayed, so a recount finds what came and went by one lookup per pod and keys
    the terms of the new pods only.
    """

    __slots__ = ("counts", "pods")

    def __init__(self) -> None:
        self.pods: dict[int, tuple[Pod, PodTerms]] = {}
        """``id(pod)`` -> (the pod, kept alive so the id stays its own, and its terms)."""
        self.counts: dict[CensusKey, int] = {}

    def update(self, pods: Sequence[Pod]) -> dict[CensusKey, AffinityTerm]:
        """Follow the row's pods to ``pods``; return the keys whose counts changed, each with a
        term of that key."""
        held = self.pods
        counts = self.counts
        changed: dict[CensusKey, AffinityTerm] = {}
        added = [pod for pod in pods if id(pod) not in held]
        if len(pods) - len(added) != len(held):
            present = {id(pod) for pod in pods}
            for identity in [identity for identity in held if identity not in present]:
                _, terms = held.pop(identity)
                for key, term in terms:
                    counts[key] -= 1
                    changed[key] = term
        for pod in added:
            terms = _pod_terms(pod)
            held[id(pod)] = (pod, terms)
            for key, term in terms:
                counts[key] = counts.get(key, 0) + 1
                changed[key] = term
        return changed


class TermCensus:
    """The distinct terms of the pods on one :class:`NodeMirror`'s nodes."""

    def __init__(self, mirror: NodeMirror) -> None:
        self._mirror = mirror
        self._rows: list[_Row] | None = None
        """Each position's pods and term counts, once the census is built."""
        self._entries: dict[CensusKey, CensusEntry] = {}
        mirror.subscribe(self)

    def entries(self, roles: Iterable[Role]) -> list[CensusEntry]:
        """The distinct terms of ``roles`` that some pod carries."""
        if self._rows is None:
            self._rows = [_Row() for _ in range(self._mirror.size)]
            for position, info in enumerate(self._mirror.infos):
                if info.pods_with_affinity:
                    self._recount(position, info)
        wanted = set(roles)
        return [entry for entry in self._entries.values() if entry.role in wanted]

    def _recount(self, position: int, info: NodeInfo) -> None:
        assert self._rows is not None
        row = self._rows[position]
        entries = self._entries
        for key, term in row.update(info.pods_with_affinity).items():
            occurrences = row.counts[key]
            if not occurrences:
                del row.counts[key]
            entry = entries.get(key)
            if entry is None:
                if not occurrences:
                    continue
                entry = entries[key] = CensusEntry(key[0], key[1], term)
            entry.set(position, occurrences)
            if not entry.occurrences:
                del entries[key]

    # RowListener ---------------------------------------------------------------------------------

    def rows_replaced(self, positions: Sequence[int]) -> None:
        if self._rows is None:
            return
        infos = self._mirror.infos
        for position in positions:
            info = infos[position]
            if info.pods_with_affinity or self._rows[position].pods:
                self._recount(position, info)

    def layout_rebuilt(self) -> None:
        self._rows = None
        self._entries = {}
