"""Which nodes could go: each node's pods placed elsewhere by the scheduler, one node at a time.

Nodes are tried largest saving first (the most allocatable CPU, then memory, then by name). For
each, the cluster is simulated again without it and without the nodes already found removable:
the pods those nodes ran become pending and the scheduler places them (DaemonSet pods and static
pods go with their node, as ``kubectl drain`` leaves them). When every such pod finds a node, the
node can go and stays removed for the next tries; otherwise it stays, and the first pod left
without a node says why. Whole simulations from the same start make every answer reproducible
and independent of what an earlier failed try did.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kopf_scheduler.config.types import SchedulerConfig
from kopf_scheduler.model.node import Node
from kopf_scheduler.sim.capacity import without_preemption
from kopf_scheduler.sim.runner import Simulation
from kopf_scheduler.sim.scenario import Scenario

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


@dataclass
class NodeDrain:
    node: str
    removable: bool
    moved: dict[str, str] = field(default_factory=dict)
    """``namespace/pod`` -> the node it went to (for a removable node: every pod it ran)."""
    stays: list[str] = field(default_factory=list)
    """Pods that leave with the node (DaemonSet and static pods)."""
    blocking_pod: str = ""
    message: str = ""
    """Why the first pod left without a node found none."""


@dataclass
class DrainResult:
    nodes: list[NodeDrain]

    @property
    def removable(self) -> list[str]:
        return [entry.node for entry in self.nodes if entry.removable]


def _saving(raw: Mapping[str, Any]) -> tuple[int, int]:
    allocatable = Node(raw).allocatable
    return allocatable.milli_cpu, allocatable.memory


def _goes_with_node(pod: Mapping[str, Any]) -> bool:
    metadata = pod.get("metadata") or {}
    if MIRROR_ANNOTATION in (metadata.get("annotations") or {}):
        return True
    return any(owner.get("kind") == "DaemonSet" for owner in metadata.get("ownerReferences") or [])


def _key(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata['name']}"


def _without(
    scenario: Scenario, removed: set[str], profiles: set[str], default_profile: str
) -> tuple[Scenario, dict[str, str], dict[str, str]]:
    """``scenario`` without the ``removed`` nodes; their pods pending (for a profile of ours),
    except those that leave with them. Returns it, and the moved and the leaving pods, each
    ``namespace/name`` with the node it ran on."""
    trial = dataclasses.replace(
        scenario,
        nodes=[n for n in scenario.nodes if n["metadata"]["name"] not in removed],
        running_pods=[],
        pending_pods=list(scenario.pending_pods),
    )
    moved: dict[str, str] = {}
    leaving: dict[str, str] = {}
    for pod in scenario.running_pods:
        node = pod["spec"]["nodeName"]
        if node not in removed:
            trial.running_pods.append(pod)
        elif _goes_with_node(pod):
            leaving[_key(pod)] = node
        else:
            pending = copy.deepcopy(pod)
            spec = pending["spec"]
            del spec["nodeName"]
            if spec.get("schedulerName") not in profiles:
                spec["schedulerName"] = default_profile
            pending["status"] = {}
            trial.pending_pods.append(pending)
            moved[_key(pod)] = node
    return trial, moved, leaving


async def find_removable_nodes(
    config: SchedulerConfig,
    scenario: Scenario,
    *,
    preemption: bool = False,
    seed: int = 0,
    candidates: Sequence[str] = (),
) -> DrainResult:
    """Try each node (``candidates``, or every node) largest saving first.

    Runs on the simulation loop: ``sim.loop.run(find_removable_nodes(...))``.
    """
    effective = config if preemption else without_preemption(config)
    profiles = {profile.scheduler_name for profile in config.profiles}
    default_profile = config.profiles[0].scheduler_name
    wanted = set(candidates)
    nodes = sorted(
        (n for n in scenario.nodes if not wanted or n["metadata"]["name"] in wanted),
        key=lambda raw: (*(-value for value in _saving(raw)), raw["metadata"]["name"]),
    )
    removed: set[str] = set()
    entries = []
    for raw in nodes:
        name = raw["metadata"]["name"]
        trial, moved, leaving = _without(scenario, removed | {name}, profiles, default_profile)
        result = await Simulation(effective, seed=seed).run(trial)
        pods = result.cluster.pods
        entry = NodeDrain(name, True, stays=[key for key, node in leaving.items() if node == name])
        for key, origin in moved.items():
            target = (pods[key].get("spec") or {}).get("nodeName") if key in pods else None
            if not target:
                entry.removable = False
                entry.blocking_pod = key
                entry.message = _failure(pods.get(key))
                entry.moved = {}
                break
            if origin == name:
                entry.moved[key] = target
        if entry.removable:
            removed.add(name)
        entries.append(entry)
    return DrainResult(entries)


def _failure(raw: Mapping[str, Any] | None) -> str:
    if raw is None:
        return "the pod was deleted"
    for condition in (raw.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("message") or "")
    return "the pod was not scheduled"
