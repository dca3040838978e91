"""The pod affinity terms that existing pods carry, each distinct term once, with where it occurs.

InterPodAffinity matches the terms of existing pods against the incoming pod: their required
anti-affinity terms in PreFilter, their required and preferred (anti-)affinity terms in PreScore.
Walking every such pod at every attempt costs time proportional to the cluster's pods, yet pods
of one workload carry equal terms. The census keeps each distinct (role, weight, term) once,
with how many times it occurs on each node position, so an attempt evaluates every distinct term
once against the incoming pod and adds up the occurrences of the ones that match.

The census is built on first use and then kept in step with the mirror: a replaced row is
recounted from its NodeInfo's pods with affinity terms, a layout rebuild starts over.
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


def _row_terms(info: NodeInfo) -> dict[CensusKey, tuple[AffinityTerm, int]]:
    """The node's terms: key -> (a term with that key, occurrences)."""
    terms: dict[CensusKey, tuple[AffinityTerm, int]] = {}

    def add(role: Role, weight: int, term: AffinityTerm) -> None:
        key = (role, weight, term_key(term))
        known = terms.get(key)
        terms[key] = (term, 1) if known is None else (known[0], known[1] + 1)

    for pod in info.pods_with_affinity:
        for term in pod.pod_affinity_required:
            add(Role.REQUIRED_AFFINITY, 0, term)
        for term in pod.anti_affinity_required:
            add(Role.REQUIRED_ANTI_AFFINITY, 0, term)
        for weighted in pod.affinity_preferred:
            add(Role.PREFERRED_AFFINITY, weighted.weight, weighted.term)
        for weighted in pod.anti_affinity_preferred:
            add(Role.PREFERRED_ANTI_AFFINITY, weighted.weight, weighted.term)
    return terms


class TermCensus:
    """The distinct terms of the pods on one :class:`NodeMirror`'s nodes."""

    def __init__(self, mirror: NodeMirror) -> None:
        self._mirror = mirror
        self._rows: list[frozenset[CensusKey]] | None = None
        """Each position's keys, once the census is built."""
        self._entries: dict[CensusKey, CensusEntry] = {}
        mirror.subscribe(self)

    def entries(self, roles: Iterable[Role]) -> list[CensusEntry]:
        """The distinct terms of ``roles`` that some pod carries."""
        if self._rows is None:
            self._rows = [frozenset()] * self._mirror.size
            for position, info in enumerate(self._mirror.infos):
                if info.pods_with_affinity:
                    self._recount(position, info)
        wanted = set(roles)
        return [entry for entry in self._entries.values() if entry.role in wanted]

    def _recount(self, position: int, info: NodeInfo) -> None:
        assert self._rows is not None
        terms = _row_terms(info)
        entries = self._entries
        for key in self._rows[position] - terms.keys():
            entry = entries[key]
            entry.set(position, 0)
            if not entry.occurrences:
                del entries[key]
        for key, (term, occurrences) in terms.items():
            known = entries.get(key)
            if known is None:
                known = entries[key] = CensusEntry(key[0], key[1], term)
            known.set(position, occurrences)
        self._rows[position] = frozenset(terms)

    # RowListener ---------------------------------------------------------------------------------

    def rows_replaced(self, positions: Sequence[int]) -> None:
        if self._rows is None:
            return
        infos = self._mirror.infos
        for position in positions:
            info = infos[position]
            if info.pods_with_affinity or self._rows[position]:
                self._recount(position, info)

    def layout_rebuilt(self) -> None:
        self._rows = None
        self._entries = {}
