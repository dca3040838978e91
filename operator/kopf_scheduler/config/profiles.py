"""Turn a profile's plugin configuration into the ordered plugin instances of each extension point.

The merge follows upstream v1: defaults live in ``multiPoint``; the user's ``multiPoint`` list
disables (``"*"`` for all) or adds defaults, keeping default positions for re-weighted plugins;
for each extension point, plugins named explicitly there come first when they override a
multiPoint plugin, then the remaining multiPoint plugins that implement the point, then the other
explicit ones. Every plugin is instantiated once and shared by all points it serves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf_scheduler.config.errors import ConfigError, ErrorCollector
from kopf_scheduler.config.types import PluginRef, PluginSet, Profile
from kopf_scheduler.framework.args import InvalidArgsError
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.interfaces import EXTENSION_POINTS, Plugin
from kopf_scheduler.framework.runtime import ProfilePlugins
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.plugins import registry
from kopf_scheduler.spelling import closest

NOT_INSTALLED = (
    " (neither in-tree nor installed: an out-of-tree plugin's distribution declares it as an "
    f"entry point in the group {registry.ENTRY_POINT_GROUP})"
)


def merged_multi_point(user: PluginSet | None) -> list[PluginRef]:
    """The default multiPoint plugins with the user's multiPoint list applied, in order."""
    defaults = [PluginRef(name, weight) for name, weight in registry.DEFAULT_MULTI_POINT]
    if user is None:
        return defaults
    disabled = {ref.name for ref in user.disabled}
    merged = [] if "*" in disabled else [ref for ref in defaults if ref.name not in disabled]
    for ref in user.enabled:
        for index, existing in enumerate(merged):
            if existing.name == ref.name:
                merged[index] = PluginRef(ref.name, ref.weight or existing.weight)
                break
        else:
            merged.append(ref)
    return merged


def _profile_field(index: int, rest: str) -> str:
    return f"profiles[{index}].{rest}"


def _unknown_plugin(name: str, known: set[str]) -> str:
    """Why ``name`` is refused: the plugin likely meant, else where plugins come from."""
    if name in registry.UNSUPPORTED_UPSTREAM_PLUGINS:
        return f"unknown plugin {name!r} (in-tree volume limit plugins are not supported)"
    suggestion = closest(name, known)
    if suggestion is not None:
        return f"unknown plugin {name!r}; did you mean {suggestion!r}?"
    return f"unknown plugin {name!r}{NOT_INSTALLED}"


def _where_enabled(profile: Profile, index: int) -> dict[str, str]:
    """The field of the first place each plugin is enabled in the profile, for error messages."""
    places: dict[str, str] = {}
    for point, plugin_set in profile.plugins.items():
        for position, ref in enumerate(plugin_set.enabled):
            field = f"plugins.{point}.enabled[{position}].name"
            places.setdefault(ref.name, _profile_field(index, field))
    return places


def _instantiate(
    profile: Profile, index: int, names: list[str], handle: Handle
) -> dict[str, Plugin]:
    """One instance of each plugin in ``names``; every unknown name and bad args are raised
    together."""
    instances: dict[str, Plugin] = {}
    try:
        out_of_tree = registry.out_of_tree_plugins()
    except registry.PluginLoadError as error:
        raise ConfigError("", str(error)) from None
    known = set(registry.plugin_names()) | out_of_tree.keys()
    errors = ErrorCollector()
    for position, name in enumerate(profile.plugin_config):
        if name not in known:
            field = _profile_field(index, f"pluginConfig[{position}].name")
            errors.add(ConfigError(field, _unknown_plugin(name, known)))
    places = _where_enabled(profile, index)
    for name in dict.fromkeys(names):
        if name not in known:
            field = places.get(name, _profile_field(index, "plugins"))
            errors.add(ConfigError(field, _unknown_plugin(name, known)))
            continue
        args: Mapping[str, Any] | None = profile.plugin_config.get(name)
        try:
            instances[name] = registry.factory(name, out_of_tree)(args, handle)
        except registry.PluginLoadError as error:
            errors.add(ConfigError(_profile_field(index, "plugins"), str(error)))
        except (InvalidArgsError, InvalidObjectError) as error:
            position = (
                list(profile.plugin_config).index(name) if name in profile.plugin_config else 0
            )
            field = error.field.removeprefix("args").lstrip(".")
            path = f"pluginConfig[{position}].args" + (f".{field}" if field else "")
            errors.add(ConfigError(_profile_field(index, path), error.reason))
    errors.raise_any()
    return instances


def build_profile_plugins(profile: Profile, handle: Handle, index: int = 0) -> ProfilePlugins:
    """Instantiate and order the plugins of ``profile``; raise ConfigError on any problem."""
    multi_point = merged_multi_point(profile.plugins.get("multiPoint"))
    referenced = [ref.name for ref in multi_point]
    for point, plugin_set in profile.plugins.items():
        if point != "multiPoint":
            referenced.extend(ref.name for ref in plugin_set.enabled)
    instances = _instantiate(profile, index, referenced, handle)
    multi_weights = {ref.name: ref.weight for ref in multi_point}

    result = ProfilePlugins()
    result.all = list(instances.values())
    for point, protocol in EXTENSION_POINTS.items():
        specific = profile.plugins.get(point, PluginSet())
        disabled = {ref.name for ref in specific.disabled}
        explicit = [ref for ref in specific.enabled]
        for ref in explicit:
            if not isinstance(instances[ref.name], protocol):
                raise ConfigError(
                    _profile_field(index, f"plugins.{point}.enabled"),
                    f"plugin {ref.name!r} does not extend the {point} extension point",
                )
        explicit_names = [ref.name for ref in explicit]
        if len(set(explicit_names)) != len(explicit_names):
            raise ConfigError(
                _profile_field(index, f"plugins.{point}.enabled"), "a plugin is listed twice"
            )
        ordered: list[PluginRef]
        if "*" in disabled:
            ordered = explicit
        else:
            overrides: list[str] = []
            from_multi: list[PluginRef] = []
            for ref in multi_point:
                if not isinstance(instances[ref.name], protocol) or ref.name in disabled:
                    continue
                if ref.name in explicit_names:
                    overrides.append(ref.name)
                    continue
                from_multi.append(ref)
            ordered = [r for r in explicit if r.name in overrides]
            ordered += from_multi
            ordered += [r for r in explicit if r.name not in overrides]
        _assign(result, point, ordered, instances, multi_weights)

    if result.queue_sort is None:
        raise ConfigError(
            _profile_field(index, "plugins.queueSort"), "no queue sort plugin is enabled"
        )
    if not result.bind:
        raise ConfigError(
            _profile_field(index, "plugins.bind"), "at least one bind plugin is needed"
        )
    return result


def _assign(
    result: ProfilePlugins,
    point: str,
    refs: list[PluginRef],
    instances: dict[str, Plugin],
    multi_weights: dict[str, int],
) -> None:
    plugins: list[Any] = [instances[ref.name] for ref in refs]
    if point == "queueSort":
        if len(plugins) > 1:
            raise ConfigError("plugins.queueSort", "only one queue sort plugin can be enabled")
        result.queue_sort = plugins[0] if plugins else None
    elif point == "score":
        result.score = [
            (instances[ref.name], ref.weight or multi_weights.get(ref.name) or 1)  # type: ignore[misc]
            for ref in refs
        ]
    elif point in _FIELD:
        setattr(result, _FIELD[point], plugins)


_FIELD = {
    "preEnqueue": "pre_enqueue",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}


def validate_profiles(profiles: Mapping[int, Profile]) -> None:
    """Build every profile once with a throwaway handle; all profiles must share QueueSort.

    ``profiles`` are keyed by their position in the file (a profile that could not be read is
    left out, and the others are still checked); the errors of all are raised together.
    """
    errors = ErrorCollector()
    queue_sorts: set[str] = set()
    for index, profile in profiles.items():
        with errors.collecting():
            plugins = build_profile_plugins(
                profile, Handle(scheduler_name=profile.scheduler_name), index
            )
            if plugins.queue_sort is not None:
                queue_sorts.add(plugins.queue_sort.name)
    if len(queue_sorts) > 1:
        errors.add(ConfigError("profiles", "all profiles must use the same queueSort plugin"))
    errors.raise_any()
