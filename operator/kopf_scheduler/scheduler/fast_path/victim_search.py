"""Preemption dry runs without clones, for the attempts where that is provably the same.

Upstream's victim search on one node removes every lower-priority pod from a copy of the node,
checks that the preemptor fits, then adds the pods back most important first and keeps as
victims those that make it stop fitting. Each check runs every Filter plugin (with the node's
nominated pods of equal or higher priority counted). When every Filter plugin that runs has a
batch form, no PreFilter extension keeps per-pod state, no Filter reads the volumes of the
node's pods (NodeVolumeLimits), and the node passes the Filters that do not look at its pods
(cordon, taints, node affinity), the only check that depends on the pods is the resource-fit
one (:class:`~kopf_scheduler.framework.interfaces.BatchResourceFit`): arithmetic on the node's
requested amounts and pod count, plus those of the counted nominated pods. That arithmetic is
done here directly on the snapshot's numbers, in the same order, with the same importance sort
and PodDisruptionBudget split, so the victims are the ones the plugins would pick.

When the preemptor does not fit even with every candidate victim gone, the node's status is the
resource-fit rejection, which depends only on what falls short: the first node with a given
shortfall runs the normal path and later ones share its status. Nodes outside the
modelled case (a pod-independent filter failing) also run the normal path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.interfaces import is_resource_fit
from kopf_scheduler.framework.node_columns.fallback import Fallback
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.framework.status import SUCCESS, Code, Status
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.preemption.victims import (
    NO_VICTIMS_REASON,
    VictimSelection,
    filter_pods_with_pdb_violation,
    select_victims_on_node,
    sort_by_importance,
)
from kopf_scheduler.scheduler.fast_path.engine import FastPath

_NO_EXTRA = (0, 0, 0, 0)


def _fits_always(node_info: NodeInfo, cpu: int, memory: int, ephemeral: int, count: int) -> int:
    return 0


class VictimSearch:
    """The fast path's :class:`~kopf_scheduler.framework.runtime.DryRunAccelerator`."""

    def __init__(self, fast_path: FastPath) -> None:
        self.fast_path = fast_path
        self.served = 0
        """Nodes decided here without cloning (for tests and diagnostics)."""

    def victim_finder(
        self,
        framework: Framework,
        state: CycleState,
        preemptor: Pod,
        pdbs: Sequence[Any],
        now: float,
    ) -> Callable[[NodeInfo], VictimSelection | None] | None:
        fast = self.fast_path
        filters = framework.batch_filters()
        if not fast.batch_filters_cover(filters, state):
            return None
        mirror = fast.mirror
        mirror.sync(framework.handle.snapshot)
        if not mirror.safe or mirror.size == 0:
            return None
        skip = state.skip_filter_plugins
        fits = [
            (name, batch) for name, batch in filters if is_resource_fit(batch) and name not in skip
        ]
        try:
            failures = fast.filter_rejections(filters, state, preemptor, None)
            free = fast.nominated(framework, state, preemptor)
            shortfall = fits[0][1].shortfall_check(state, free) if fits else _fits_always
        except Fallback:
            return None
        static_ok = np.ones(mirror.size, dtype=np.bool_)
        for failure in failures:
            static_ok &= ~failure.rejections.fails
        usable = static_ok.tolist()
        extra = free.extra
        position = mirror.position
        infos = mirror.infos
        priority = preemptor.priority
        budgets: Sequence[PodDisruptionBudget] = pdbs
        fit_name = fits[0][0] if fits else ""
        by_shortfall: dict[int, Status] = {}

        def reference(node_info: NodeInfo) -> VictimSelection:
            return select_victims_on_node(framework, state, preemptor, node_info, budgets, now=now)

        def find(node_info: NodeInfo) -> VictimSelection | None:
            index = position.get(node_info.name)
            if index is None or infos[index] is not node_info or not usable[index]:
                return None
            potential = [pod for pod in node_info.pods if pod.priority < priority]
            if not potential:
                self.served += 1
                return VictimSelection(
                    Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS_REASON)
                )
            requested = node_info.requested
            more_cpu, more_memory, more_ephemeral, more_pods = extra.get(index, _NO_EXTRA)
            cpu = requested.milli_cpu + more_cpu
            memory = requested.memory + more_memory
            ephemeral = requested.ephemeral_storage + more_ephemeral
            count = len(node_info.pods) + more_pods
            for pod in potential:
                amounts = pod.requests
                cpu -= amounts.milli_cpu
                memory -= amounts.memory
                ephemeral -= amounts.ephemeral_storage
                count -= 1
            short = shortfall(node_info, cpu, memory, ephemeral, count)
            if short:
                status = by_shortfall.get(short)
                if status is not None:
                    self.served += 1
                    return VictimSelection(status)
                selection = reference(node_info)
                status = selection.status
                if status.is_rejected() and status.plugin == fit_name and not selection.victims:
                    by_shortfall[short] = status
                return selection
            ordered = sort_by_importance(potential, now)
            violating, non_violating = filter_pods_with_pdb_violation(ordered, budgets)
            victims: list[Pod] = []
            num_violating = 0
            for group_violates, group in ((True, violating), (False, non_violating)):
                for pod in group:
                    amounts = pod.requests
                    cpu += amounts.milli_cpu
                    memory += amounts.memory
                    ephemeral += amounts.ephemeral_storage
                    count += 1
                    if not shortfall(node_info, cpu, memory, ephemeral, count):
                        continue
                    cpu -= amounts.milli_cpu
                    memory -= amounts.memory
                    ephemeral -= amounts.ephemeral_storage
                    count -= 1
                    victims.append(pod)
                    if group_violates:
                        num_violating += 1
            if violating and non_violating:
                victims = sort_by_importance(victims, now)
            self.served += 1
            return VictimSelection(SUCCESS, victims, num_violating)

        return find
