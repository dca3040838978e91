"""Preemption dry runs without clones, for the attempts where that is provably the same.

Upstream's victim search on one node removes every lower-priority pod from a copy of the node,
checks that the preemptor fits, then adds the pods back most important first and keeps as
victims those that make it stop fitting. Each check runs every Filter plugin. When the profile's
filters are the ones the fast path models, no PreFilter extension keeps per-pod state, and the
node passes its pod-independent filters (cordon, taints, node affinity), the only check that
depends on the pods is NodeResourcesFit, which is integer arithmetic on the node's requested
amounts and pod count. That arithmetic is done here directly on the snapshot's numbers, in the
same order, with the same importance sort and PodDisruptionBudget split, so the victims are the
ones the plugins would pick.

Nodes outside that case (nominated pods on them, a pod-independent filter failing, the preemptor
not fitting even with every candidate victim gone) get ``None`` and run the normal path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.framework.status import SUCCESS, Code, Status
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.preemption.victims import (
    NO_VICTIMS_REASON,
    VictimSelection,
    filter_pods_with_pdb_violation,
    sort_by_importance,
)
from kopf_scheduler.scheduler.fast_path.engine import Fallback, FastPath
from kopf_scheduler.scheduler.fast_path.profile import Kind


class VictimSearch:
    """The fast path's :class:`~kopf_scheduler.framework.runtime.DryRunAccelerator`."""

    def __init__(self, fast_path: FastPath) -> None:
        self.fast_path = fast_path
        self.served = 0
        """Nodes decided here (for tests and diagnostics)."""

    def victim_finder(
        self,
        framework: Framework,
        state: CycleState,
        preemptor: Pod,
        pdbs: Sequence[Any],
        now: float,
    ) -> Callable[[NodeInfo], VictimSelection | None] | None:
        fast = self.fast_path
        steps = fast.support(framework).filters
        if steps is None:
            return None
        skip = state.skip_filter_plugins
        for plugin in framework.plugins.pre_filter:
            if plugin.name not in skip and plugin.pre_filter_extensions() is not None:
                return None
        mirror = fast.mirror
        mirror.sync(framework.handle.snapshot)
        if not mirror.safe or mirror.size == 0:
            return None
        has_fit = any(s.kind is Kind.FIT and s.name not in skip for s in steps)
        try:
            failures = fast.step_failures(steps, state, preemptor, include_fit=False)
            request = fast.fit_request(state) if has_fit else None
            nominated = set(fast.nominated_positions(framework))
        except Fallback:
            return None
        static_ok = np.ones(mirror.size, dtype=np.bool_)
        for _, fails in failures:
            static_ok &= ~fails
        usable = static_ok.tolist()
        for index in nominated:
            usable[index] = False
        position = mirror.position
        infos = mirror.infos
        priority = preemptor.priority
        budgets: Sequence[PodDisruptionBudget] = pdbs
        if request is not None:
            wanted_cpu = request.milli_cpu
            wanted_memory = request.memory
            wanted_ephemeral = request.ephemeral_storage

        def fits(node_info: NodeInfo, cpu: int, memory: int, ephemeral: int, count: int) -> bool:
            if request is None:
                return True
            allocatable = node_info.allocatable
            if count + 1 > allocatable.allowed_pod_number:
                return False
            if wanted_cpu > 0 and wanted_cpu > allocatable.milli_cpu - cpu:
                return False
            if wanted_memory > 0 and wanted_memory > allocatable.memory - memory:
                return False
            return not (
                wanted_ephemeral > 0 and wanted_ephemeral > allocatable.ephemeral_storage - ephemeral
            )

        def find(node_info: NodeInfo) -> VictimSelection | None:
            index = position.get(node_info.name)
            if index is None or infos[index] is not node_info or not usable[index]:
                return None
            potential = [pod for pod in node_info.pods if pod.priority < priority]
            if not potential:
                self.served += 1
                return VictimSelection(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS_REASON))
            requested = node_info.requested
            cpu = requested.milli_cpu
            memory = requested.memory
            ephemeral = requested.ephemeral_storage
            count = len(node_info.pods)
            for pod in potential:
                amounts = pod.requests
                cpu -= amounts.milli_cpu
                memory -= amounts.memory
                ephemeral -= amounts.ephemeral_storage
                count -= 1
            if not fits(node_info, cpu, memory, ephemeral, count):
                return None
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
                    if fits(node_info, cpu, memory, ephemeral, count):
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
