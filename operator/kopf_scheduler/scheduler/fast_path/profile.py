"""Which of a profile's Filter and Score plugins the vectorised path can stand in for.

The fast path knows the arithmetic of a fixed set of in-tree plugins. A profile qualifies for
vectorised filtering when every Filter plugin is one of them (and configured the way the fast
path understands), and for vectorised scoring when every Score plugin is; the two are decided
separately. PodTopologySpread and InterPodAffinity, whose Filter and Score depend on other pods,
are modelled from the state their PreFilter and PreScore write. NodePorts, DynamicResources and
the four volume plugins are accepted only as "must have skipped": a given attempt qualifies only
when their PreFilter returned Skip for it (DynamicResources does for every pod it lets through,
the volume plugins for pods without the volumes they check). VolumeBinding is also a Score
plugin that v1.34 lets score only behind a feature gate that is off, so its PreScore skips it on
every attempt: as a Score plugin it is "must have skipped" too.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.model.resources import CPU, MEMORY
from kopf_scheduler.plugins.dynamic_resources import DynamicResources
from kopf_scheduler.plugins.image_locality import ImageLocality
from kopf_scheduler.plugins.inter_pod_affinity.plugin import InterPodAffinity
from kopf_scheduler.plugins.node_affinity import NodeAffinity
from kopf_scheduler.plugins.node_name import NodeName
from kopf_scheduler.plugins.node_ports import NodePorts
from kopf_scheduler.plugins.node_resources_balanced_allocation import (
    NodeResourcesBalancedAllocation,
)
from kopf_scheduler.plugins.node_resources_fit import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    NodeResourcesFit,
)
from kopf_scheduler.plugins.node_unschedulable import NodeUnschedulable
from kopf_scheduler.plugins.node_volume_limits import NodeVolumeLimits
from kopf_scheduler.plugins.pod_topology_spread.plugin import PodTopologySpread
from kopf_scheduler.plugins.taint_toleration import TaintToleration
from kopf_scheduler.plugins.volume_binding import VolumeBinding
from kopf_scheduler.plugins.volume_restrictions import VolumeRestrictions
from kopf_scheduler.plugins.volume_zone import VolumeZone

SUPPORTED_RESOURCES = frozenset({CPU, MEMORY})
"""Resources the vectorised resource scorers handle (the default configuration's)."""


_SKIPPED_ONLY_FILTERS: frozenset[type] = frozenset(
    {
        NodePorts,
        DynamicResources,
        VolumeRestrictions,
        NodeVolumeLimits,
        VolumeBinding,
        VolumeZone,
    }
)
"""Filter plugins the fast path stands in for only on attempts where their PreFilter skipped
them: host ports, resource claims, and the volume plugins, which skip pods without volumes."""


class Kind(Enum):
    UNSCHEDULABLE = "NodeUnschedulable"
    NODE_NAME = "NodeName"
    TAINTS = "TaintToleration"
    NODE_AFFINITY = "NodeAffinity"
    FIT = "NodeResourcesFit"
    BALANCED = "NodeResourcesBalancedAllocation"
    IMAGES = "ImageLocality"
    SPREAD = "PodTopologySpread"
    INTER_POD_AFFINITY = "InterPodAffinity"
    SKIPPED_ONLY = "skipped-only"
    """Supported only when the plugin skipped itself for the attempt."""


@dataclass(frozen=True)
class Step:
    kind: Kind
    name: str
    plugin: Any
    weight: int = 0


@dataclass(frozen=True)
class ProfileSupport:
    filters: tuple[Step, ...] | None
    """The Filter plugins in order, or ``None`` when some Filter plugin is not supported."""
    scores: tuple[Step, ...] | None
    """The Score plugins in order with weights, or ``None`` when one is not supported."""


def _filter_kind(plugin: Any) -> Kind | None:
    kind = type(plugin)
    if kind is NodeUnschedulable:
        return Kind.UNSCHEDULABLE
    if kind is NodeName:
        return Kind.NODE_NAME
    if kind is TaintToleration:
        return Kind.TAINTS
    if kind is NodeAffinity:
        return Kind.NODE_AFFINITY if plugin.args.added_affinity is None else None
    if kind is NodeResourcesFit:
        return Kind.FIT
    if kind is PodTopologySpread:
        return Kind.SPREAD
    if kind is InterPodAffinity:
        return Kind.INTER_POD_AFFINITY
    if kind in _SKIPPED_ONLY_FILTERS:
        return Kind.SKIPPED_ONLY
    return None


def _score_kind(plugin: Any) -> Kind | None:
    kind = type(plugin)
    if kind is TaintToleration:
        return Kind.TAINTS
    if kind is NodeAffinity:
        return Kind.NODE_AFFINITY if plugin.args.added_affinity is None else None
    if kind is NodeResourcesFit:
        strategy = plugin.args.scoring_strategy
        if strategy.type not in (LEAST_ALLOCATED, MOST_ALLOCATED):
            return None
        if not {spec.name for spec in strategy.resources} <= SUPPORTED_RESOURCES:
            return None
        return Kind.FIT
    if kind is NodeResourcesBalancedAllocation:
        if not {spec.name for spec in plugin.args.resources} <= SUPPORTED_RESOURCES:
            return None
        return Kind.BALANCED
    if kind is ImageLocality:
        return Kind.IMAGES
    if kind is PodTopologySpread:
        return Kind.SPREAD
    if kind is InterPodAffinity:
        return Kind.INTER_POD_AFFINITY
    if kind is VolumeBinding:
        return Kind.SKIPPED_ONLY
    return None


def _filter_steps(framework: Framework) -> tuple[Step, ...] | None:
    steps: list[Step] = []
    for plugin in framework.plugins.filter:
        kind = _filter_kind(plugin)
        if kind is None:
            return None
        steps.append(Step(kind, plugin.name, plugin))
    return tuple(steps)


def _score_steps(framework: Framework) -> tuple[Step, ...] | None:
    steps: list[Step] = []
    for plugin, weight in framework.plugins.score:
        kind = _score_kind(plugin)
        if kind is None:
            return None
        steps.append(Step(kind, plugin.name, plugin, weight))
    return tuple(steps)


def analyse(framework: Framework) -> ProfileSupport:
    """What the fast path can do for ``framework``'s profile."""
    return ProfileSupport(_filter_steps(framework), _score_steps(framework))
