"""The plugin registry: the in-tree plugins, the out-of-tree ones installed as Python packages,
and kube-scheduler's default plugin list (v1.34 order and weights).

Plugin modules are imported lazily so that an unfinished or optional plugin cannot break the
others, and so that ``--help`` stays fast.

Out-of-tree plugins are what scheduler-plugins users compile into their kube-scheduler; here a
distribution declares an entry point in the group ``kopf_scheduler.plugins`` whose name is the
plugin's name and whose object is its factory, ``new(args, handle)``, like an in-tree module's.
A KubeSchedulerConfiguration enables it by that name and passes it ``pluginConfig`` args, which
its factory validates by raising :class:`~kopf_scheduler.framework.args.InvalidArgsError`, as ours
do. Only the entry points a configuration names are loaded, so a broken package that nobody
enables cannot stop the scheduler; but a name that clashes with an in-tree plugin, or that two
distributions declare, always does (upstream refuses a duplicate registration too): otherwise a
configuration could silently get a different plugin than its author meant. Every such problem is
one line naming the entry point and its distribution, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.errors import InvalidObjectError

PluginFactory = Callable[[Mapping[str, Any] | None, api.Handle], api.Plugin]

ENTRY_POINT_GROUP = "kopf_scheduler.plugins"

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
    "Coscheduling": "coscheduling",
}
"""In-tree plugins by name: kube-scheduler's, then scheduler-plugins' that we carry (enabled
only by a profile that names them)."""

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


class PluginLoadError(ValueError):
    """An out-of-tree plugin that cannot be used; the message names its entry point."""


@dataclass(frozen=True)
class OutOfTreePlugin:
    """One entry point of the group ``kopf_scheduler.plugins``, not loaded yet."""

    entry_point: EntryPoint

    @property
    def name(self) -> str:
        return self.entry_point.name

    @property
    def distribution(self) -> str:
        dist = self.entry_point.dist
        if dist is None:
            return "an unknown distribution"
        return f"distribution {dist.name} {dist.version}"

    def __str__(self) -> str:
        return f"entry point {self.name!r} ({self.entry_point.value}) of {self.distribution}"

    def factory(self) -> PluginFactory:
        """Import the factory; PluginLoadError when that fails or it is not callable."""
        try:
            loaded = self.entry_point.load()
        except Exception as error:  # whatever the package raises while it is imported
            raise PluginLoadError(f"{self} cannot be loaded: {_one_line(error)}") from None
        if not callable(loaded):
            raise PluginLoadError(
                f"{self} is {type(loaded).__name__}, not a factory new(args, handle)"
            )
        return self._checked(loaded)

    def _checked(self, new: Callable[..., Any]) -> PluginFactory:
        def build(args: Mapping[str, Any] | None, handle: api.Handle) -> api.Plugin:
            try:
                plugin = new(args, handle)
            except (api.InvalidArgsError, InvalidObjectError):
                raise
            except Exception as error:  # a bug in the plugin, reported like a failed import
                raise PluginLoadError(
                    f"{self} failed to create the plugin: {_one_line(error)}"
                ) from None
            if getattr(plugin, "name", None) != self.name:
                raise PluginLoadError(
                    f"{self} made a plugin named {getattr(plugin, 'name', None)!r}; "
                    f"its name must be the entry point's, {self.name!r}"
                )
            built: api.Plugin = plugin
            return built

        return build


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def plugin_names() -> list[str]:
    """The in-tree plugins."""
    return list(_MODULES)


def out_of_tree_plugins() -> dict[str, OutOfTreePlugin]:
    """The installed out-of-tree plugins by name; PluginLoadError for a clashing name."""
    return _discover(tuple(sys.path))


@lru_cache(maxsize=8)
def _discover(path: tuple[str, ...]) -> dict[str, OutOfTreePlugin]:
    """Scan the installed distributions once per ``sys.path`` (about 10 ms a scan)."""
    found: dict[str, OutOfTreePlugin] = {}
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        plugin = OutOfTreePlugin(entry_point)
        if plugin.name in _MODULES:
            raise PluginLoadError(
                f"{plugin} in group {ENTRY_POINT_GROUP} clashes with the in-tree plugin "
                f"{plugin.name}; rename it"
            )
        other = found.get(plugin.name)
        if other is not None and other.entry_point.value != entry_point.value:
            raise PluginLoadError(f"{plugin} clashes with {other}; uninstall one of them")
        found.setdefault(plugin.name, plugin)
    return found


def factory(name: str, out_of_tree: Mapping[str, OutOfTreePlugin] | None = None) -> PluginFactory:
    """The factory of plugin ``name``, in-tree or from ``out_of_tree``; KeyError if unknown.

    PluginLoadError when an out-of-tree plugin cannot be loaded.
    """
    module_name = _MODULES.get(name)
    if module_name is None:
        return (out_of_tree or {})[name].factory()
    module = importlib.import_module(f"kopf_scheduler.plugins.{module_name}")
    new: PluginFactory = module.new
    return new
