"""The in-tree plugin registry and kube-scheduler's default plugin list (v1.34 order and weights).

Plugin modules are imported lazily so that an unfinished or optional plugin cannot break the
others, and so that ``--help`` stays fast.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.interfaces import Plugin

PluginFactory = Callable[[Mapping[str, Any] | None, Handle], Plugin]

_MODULES: dict[str, str] = {
    "PrioritySort": "priority_sort",
    "SchedulingGates": "scheduling_gates",
    "NodeUnschedulable": "node_unschedulable",
    "NodeName": "node_name",
    "TaintToleration": "taint_toleration",
    "NodeAffinity": "node_affinity",
    "NodePorts": "node_ports",
    "NodeResourcesFit": "node_resources_fit",
    "VolumeRestrictions": "volume_restrictions",
    "NodeVolumeLimits": "node_volume_limits",
    "VolumeBinding": "volume_binding",
    "VolumeZone": "volume_zone",
    "PodTopologySpread": "pod_topology_spread",
    "InterPodAffinity": "inter_pod_affinity",
    "DynamicResources": "dynamic_resources",
    "DefaultPreemption": "default_preemption",
    "NodeResourcesBalancedAllocation": "node_resources_balanced_allocation",
    "ImageLocality": "image_locality",
    "DefaultBinder": "default_binder",
}

DEFAULT_MULTI_POINT: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 0),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
)
"""The default profile's multiPoint plugins with their score weights (0 = not a score plugin).
DynamicResources stands right before DefaultPreemption, where v1.34 inserts it (dynamic resource
allocation is on by default there)."""

UNSUPPORTED_UPSTREAM_PLUGINS = frozenset(
    {
        "EBSLimits",
        "GCEPDLimits",
        "AzureDiskLimits",
        "CinderLimits",
    }
)
"""Upstream plugins that kopf-scheduler does not implement (the in-tree volume limits)."""


def plugin_names() -> list[str]:
    return list(_MODULES)


def factory(name: str) -> PluginFactory:
    """The factory of plugin ``name``; KeyError for an unknown plugin."""
    module_name = _MODULES[name]
    module = importlib.import_module(f"kopf_scheduler.plugins.{module_name}")
    new: PluginFactory = module.new
    return new
