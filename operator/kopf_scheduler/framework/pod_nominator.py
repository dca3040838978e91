"""What plugins and the runtime read of the nominations: the pods nominated to a node.

A nominated pod (usually a preemptor waiting for its victims to go) holds room on its node; the
runtime counts it there when it filters pods of equal or lower priority. The scheduling queue's
nominator implements this; :class:`NoNominations` stands in where there is no queue.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kopf_scheduler.framework.types import NominatingInfo
    from kopf_scheduler.model.pod import Pod


class PodNominator(Protocol):
    def nominated_pods_for_node(self, node_name: str) -> list[Pod]: ...

    def add_nominated_pod(self, pod: Pod, info: NominatingInfo | None) -> None: ...

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None: ...


class NoNominations:
    """A nominator that never holds a nomination."""

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return []

    def add_nominated_pod(self, pod: Pod, info: NominatingInfo | None) -> None:
        return None

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        return None

    def nominated_pods_by_node(self) -> Iterable[tuple[str, list[Pod]]]:
        return ()


def counts_against(nominated: Pod, pod: Pod) -> bool:
    """Whether ``nominated`` holds its room against ``pod``: it has equal or higher priority and is
    not ``pod`` itself (a pod is never in its own way)."""
    return nominated.priority >= pod.priority and nominated.uid != pod.uid


def nominated_pods_by_node(
    nominator: PodNominator, node_names: Iterable[str]
) -> Iterable[tuple[str, list[Pod]]]:
    """Every node's nominated pods: only the nodes with nominations when the nominator can list
    them (the queue's can), else each of ``node_names`` asked in turn."""
    by_node = getattr(nominator, "nominated_pods_by_node", None)
    if callable(by_node):
        listed: Iterable[tuple[str, list[Pod]]] = by_node()
        return listed
    return ((name, nominator.nominated_pods_for_node(name)) for name in node_names)
