"""Filling the cluster with copies wave by wave, when the copies only compete for node room.

Counting copies one by one runs a whole scheduling cycle per copy; on a cluster of thousands of
nodes with room for tens of thousands of copies that is minutes. Most templates, though, are
plain: no pod (anti-)affinity, no hard topology spread, no volumes or device claims, no gang.
For such a copy, whether it fits on a node depends only on that node and the pods on it, and one
more copy on a node only ever takes room away. Then the one-by-one count ends in the same place
whatever order the copies took: every node holds copies until the next one no longer passes the
filters there, and the spread per node is the same as the scheduler's.

:func:`fill_by_waves` reaches that end in a few waves: each wave asks the profile's PreFilter
and Filter plugins which nodes the next copy passes on (every node, no early stop) and puts one
copy on each of them. The copy that stops the count still goes through a real scheduling cycle
afterwards, so the failure message and reasons are the scheduler's own, and a copy that fits
after all (a wrong premise) is placed and counted as any other.

:func:`wave_obstacle` says why a template cannot be filled this way; the count then goes one by
one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.model.affinity import DO_NOT_SCHEDULE
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins.pod_topology_spread.plugin import PodTopologySpread
from kopf_scheduler.scheduler.loop import Scheduler
from kopf_scheduler.sim.admission import admit_priority, default_pod

NODE_LOCAL_PLUGINS = frozenset(
    {
        "PrioritySort",
        "SchedulingGates",
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "DefaultPreemption",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        "DefaultBinder",
    }
)
"""The default profile's plugins: for a copy with none of the obstacles below, each one's
verdict on a node depends on that node alone (the volume, spread, affinity and device plugins
skip such a copy, or look only at terms other pods already had; DefaultPreemption acts only
at PostFilter, which a count without preemption switches off)."""

PLAIN_VOLUME_SOURCES = frozenset(
    {"configMap", "secret", "emptyDir", "downwardAPI", "projected", "hostPath"}
)
"""Volume sources no scheduling plugin counts or binds."""


def wave_obstacle(
    framework: Framework, copy_pod: Pod, pending: list[Pod], *, preemption: bool
) -> str:
    """Why copies of ``copy_pod`` may affect one another beyond their node; empty if they do not.

    ``pending`` are the cluster's pods still waiting for this scheduler: a copy must not be able
    to make one of them schedulable (its affinity or spread could count the copies).
    """
    if preemption:
        return "preemption may evict pods for a copy"
    unknown = sorted({plugin.name for plugin in framework.plugins.all} - NODE_LOCAL_PLUGINS)
    if unknown:
        return f"plugins beyond the default profile: {', '.join(unknown)}"
    if copy_pod.pod_affinity_required or copy_pod.anti_affinity_required:
        return "the template has required pod (anti-)affinity"
    spread = next((p for p in framework.plugins.filter if isinstance(p, PodTopologySpread)), None)
    if spread is not None and spread.constraint_source.constraints(copy_pod, DO_NOT_SCHEDULE):
        return "the template spreads with DoNotSchedule"
    spec: Mapping[str, Any] = copy_pod.raw.get("spec") or {}
    if spec.get("resourceClaims"):
        return "the template claims devices"
    for volume in spec.get("volumes") or []:
        sources = set(volume) - {"name"}
        if not sources <= PLAIN_VOLUME_SOURCES:
            return f"the template's volume {volume.get('name')!r} is one plugins account for"
    for pod in pending:
        if pod.pod_affinity_required or pod.topology_spread_constraints:
            return f"pending pod {pod.key} has pod affinity or spread a copy could satisfy"
    return ""


def admitted_copy(raw: Mapping[str, Any], priority_classes: Mapping[str, Any]) -> Pod:
    """The scheduler's view of a copy as the API server would store it."""
    stored = copy.deepcopy(dict(raw))
    spec = stored.setdefault("spec", {})
    default_pod(spec)
    admit_priority(spec, priority_classes)
    return Pod(stored)


def feasible_nodes(scheduler: Scheduler, framework: Framework, pod: Pod) -> list[str]:
    """The nodes ``pod`` passes PreFilter and Filter on, all of them, in the cluster as it is."""
    scheduler.cache.update_snapshot(scheduler.snapshot)
    nodes = scheduler.algorithm.feasible_everywhere(
        framework, CycleState(), pod, scheduler.snapshot
    )
    return sorted(node.name for node in nodes)


def fill_by_waves(
    scheduler: Scheduler,
    framework: Framework,
    copy_pod: Pod,
    place: Callable[[str], None],
) -> int:
    """Place copies wave by wave until the copy fits on no node; the number of copies placed.

    ``place(node)`` creates the next copy bound to ``node``; the scheduler's cache sees it
    before the next wave asks the filters again.
    """
    placed = 0
    while nodes := feasible_nodes(scheduler, framework, copy_pod):
        for node in nodes:
            place(node)
        placed += len(nodes)
    return placed
