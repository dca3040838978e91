"""Nomination hygiene: clear a pod's ``nominatedNodeName`` once it can no longer mean anything.

Upstream leaves stale nominations behind (kubernetes #106780, #85677, #95752): a pod stays
nominated to a node that was deleted, cordoned, or that it can never fit, and keeps reserving
room there in every other pod's filter pass. This is additive to upstream's decisions and on by
default (``kopfScheduler.nominationHygiene``): a nomination is cleared, in the nominator and on
the pod's status, when

- the nominated node is deleted or marked unschedulable;
- an attempt found the nominated node UnschedulableAndUnresolvable for the pod and preemption
  did not nominate it anywhere (upstream would keep the nomination);
- the pod was bound to another node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Coroutine
from typing import Any

import structlog

from kopf_scheduler.framework.status import Code
from kopf_scheduler.framework.types import FitError, NominatingInfo, NominatingMode
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.ports import ApiError, PodStatusPatch, PodStatusWriter

logger = structlog.get_logger("kopf_scheduler.nominations")


@dataclasses.dataclass(kw_only=True, eq=False, repr=False)
class NominationHygiene:
    enabled: bool
    status_writer: PodStatusWriter
    nominated_pods_for_node: Callable[[str], list[Pod]]
    forget: Callable[[Pod], None]
    spawn: Callable[[Coroutine[Any, Any, None]], None]
    cleared: list[tuple[str, str, str]] = dataclasses.field(default_factory=list, init=False)
    """``(pod key, node, why)`` of every nomination cleared, for tests and explanations."""

    def _clear(self, pod: Pod, node: str, why: str) -> None:
        self.forget(pod)
        self.cleared.append((pod.key, node, why))
        logger.info("nomination_cleared", pod=pod.key, node=node, reason=why)
        self.spawn(self._patch(pod))

    async def _patch(self, pod: Pod) -> None:
        patch = PodStatusPatch(set_nominated_node_name=True, nominated_node_name="")
        try:
            await self.status_writer.patch_status(pod, patch)
        except ApiError as error:
            logger.warning("nomination_clear_failed", pod=pod.key, reason=str(error))

    def node_gone(self, node_name: str, why: str) -> None:
        """The node was deleted or cordoned: nominations to it are void."""
        if not self.enabled:
            return
        for pod in self.nominated_pods_for_node(node_name):
            self._clear(pod, node_name, why)

    def after_failure(
        self, pod: Pod, fit: FitError | None, nominating: NominatingInfo | None
    ) -> NominatingInfo | None:
        """Turn a "keep the nomination" outcome into "clear it" when the node is hopeless."""
        if not self.enabled or fit is None or not pod.nominated_node_name:
            return nominating
        if nominating is not None and nominating.mode is NominatingMode.OVERRIDE:
            return nominating
        status = fit.diagnosis.node_to_status.get(pod.nominated_node_name)
        if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            self.cleared.append((pod.key, pod.nominated_node_name, "unresolvable for the pod"))
            return NominatingInfo.clear()
        return nominating

    def bound(self, pod: Pod) -> None:
        """The watch shows ``pod`` bound; a nomination to another node is stale."""
        if not self.enabled:
            return
        node = pod.nominated_node_name
        if node and node != pod.node_name:
            self.cleared.append((pod.key, node, f"bound to {pod.node_name}"))
            self.spawn(self._patch(pod))
