"""How full each node is: the requests of the pods bound to it against what it offers.

A node's utilisation is the sum of the requests of its pods that have not finished (a Succeeded
or Failed pod holds nothing) beside its allocatable, per resource: CPU in millicores, memory in
bytes, the number of pods, and each extended resource the node offers or its pods request. These
are the amounts NodeResourcesFit compares, so a node near full is one the next pod of that size
does not fit. ``simulate`` reports it at the start of the run and at its end, ``capacity``'s
matrix before the first copy and after the last. A node or pod the scheduler ignores as malformed
(a quantity it cannot read) is left out here as well.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.resources import CPU, MEMORY, PODS, pod_requests

BASIC_RESOURCES = (CPU, MEMORY, PODS)
"""Shown for every node, in this order; extended resources follow, by name."""


@dataclass
class Utilisation:
    """One node's (or the cluster's) requested and allocatable amounts, by resource name."""

    requested: dict[str, int]
    allocatable: dict[str, int]

    def share(self, resource: str) -> float:
        """The percentage of the allocatable amount requested (0 when none is offered)."""
        offered = self.allocatable.get(resource, 0)
        return 100.0 * self.requested.get(resource, 0) / offered if offered else 0.0


def node_utilisation(
    nodes: Mapping[str, Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]
) -> dict[str, Utilisation]:
    """Each node's utilisation, in the order of ``nodes``, from the pods bound to it."""
    result: dict[str, Utilisation] = {}
    for name, raw in nodes.items():
        try:
            allocatable = Node(raw).allocatable
        except InvalidObjectError:
            continue
        offered = {CPU: allocatable.milli_cpu, MEMORY: allocatable.memory}
        offered[PODS] = allocatable.allowed_pod_number
        offered.update(sorted((key, value) for key, value in allocatable.scalar.items() if value))
        result[name] = Utilisation(dict.fromkeys(offered, 0), offered)
    for pod in pods:
        spec = pod.get("spec") or {}
        entry = result.get(spec.get("nodeName") or "")
        if entry is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        try:
            requests = pod_requests(spec)
        except InvalidObjectError:
            continue
        used = entry.requested
        used[CPU] += requests.milli_cpu
        used[MEMORY] += requests.memory
        used[PODS] += 1
        for key, value in requests.scalar.items():
            if value:
                used[key] = used.get(key, 0) + value
                entry.allocatable.setdefault(key, 0)
    return result


def resources_of(utilisations: Iterable[Utilisation]) -> list[str]:
    """The resources any of ``utilisations`` has: the basic ones, then the extended by name."""
    extended = {key for each in utilisations for key in each.allocatable} - set(BASIC_RESOURCES)
    return [*BASIC_RESOURCES, *sorted(extended)]


def total(utilisations: Iterable[Utilisation], resources: Iterable[str]) -> Utilisation:
    """The sum over nodes, with every one of ``resources`` (0 where no node has it)."""
    every = list(utilisations)
    return Utilisation(
        {key: sum(each.requested.get(key, 0) for each in every) for key in resources},
        {key: sum(each.allocatable.get(key, 0) for each in every) for key in resources},
    )
